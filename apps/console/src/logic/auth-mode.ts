/** `GET /api/v1/auth/mode`: what this instance asks a browser for. */
export interface AuthMode {
  useUserAuth: boolean;
  useApiKeys: boolean;
  multiTenant: boolean;
}

/**
 * How the console signs in, by the spec's table: a login form whenever USE_USER_AUTH is on (with API keys
 * on too, programs use keys and people log in); a pasted key when only API keys are on (there is no other
 * coherent mechanism for a browser); nothing when both are off.
 */
export type SignInKind = 'login' | 'paste-key' | 'open';

export function signInKind(mode: AuthMode): SignInKind {
  if (mode.useUserAuth) return 'login';
  if (mode.useApiKeys) return 'paste-key';
  return 'open';
}

/**
 * What a 401 on a page means to the person at the console: a session or key that worked a moment ago has
 * ended (expired, logged out elsewhere, rotated or revoked), which the sign-in screen says in so many words
 * rather than showing a blank page or a raw error.
 */
export function endedMessage(kind: SignInKind): string {
  switch (kind) {
    case 'login':
      return 'Your session has expired or was ended. Sign in again.';
    case 'paste-key':
      return 'The API key no longer works (rotated, revoked or unknown). Paste a valid key.';
    case 'open':
      return 'The server now asks for credentials. Reload the page.';
  }
}

/** A pasted key is checked before it is kept: the shape every Tapyard key has, no whitespace inside. */
export function pastedKeyProblem(value: string): string | null {
  const key = value.trim();
  if (key === '') return 'Paste an API key.';
  if (/\s/.test(key)) return 'An API key holds no spaces or line breaks.';
  return null;
}
