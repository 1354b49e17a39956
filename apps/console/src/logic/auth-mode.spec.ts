import { endedMessage, pastedKeyProblem, signInKind } from './auth-mode';

describe('signInKind: the spec table of USE_USER_AUTH and USE_API_KEYS', () => {
  it.each([
    [false, false, 'open'],
    [true, true, 'login'],
    [true, false, 'login'],
    [false, true, 'paste-key'],
  ] as const)('USE_USER_AUTH=%s USE_API_KEYS=%s: %s', (useUserAuth, useApiKeys, kind) => {
    expect(signInKind({ useUserAuth, useApiKeys, multiTenant: false })).toBe(kind);
  });

  it('does not change with multi-tenant mode', () => {
    expect(signInKind({ useUserAuth: false, useApiKeys: true, multiTenant: true })).toBe('paste-key');
  });
});

describe('endedMessage', () => {
  it('tells a login that its session ended and a pasted key that it stopped working', () => {
    expect(endedMessage('login')).toMatch(/session has expired/);
    expect(endedMessage('paste-key')).toMatch(/rotated, revoked or unknown/);
  });
});

describe('pastedKeyProblem', () => {
  it('accepts a key with surrounding whitespace and refuses an empty one or one with spaces inside', () => {
    expect(pastedKeyProblem('  tpy_abc\n')).toBeNull();
    expect(pastedKeyProblem('   ')).toMatch(/Paste/);
    expect(pastedKeyProblem('tpy_a bc')).toMatch(/no spaces/);
  });
});
