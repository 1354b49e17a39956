import { EnvReader } from './env-reader';

export type CapabilityEnforcement = 'enforce' | 'log-only';
/** Who may read Swagger UI and the OpenAPI JSON: anyone, any valid key or session, or nobody. */
export type ApiDocsAccess = 'public' | 'authenticated' | 'off';

/** Authentication and access: API keys, users and sessions, tenants, login back-off. */
export interface AuthConfig {
  readonly useUserAuth: boolean;
  readonly useApiKeys: boolean;
  readonly multiTenant: boolean;
  readonly capabilityEnforcement: CapabilityEnforcement;
  /** API_DOCS; by default public only when neither API keys nor user auth is on. */
  readonly apiDocs: ApiDocsAccess;
  /** Accepted as the full-access key `bootstrap` when API keys are on; stored hashed. */
  readonly bootstrapApiKey: string | null;
  /** Password of the `admin` user created when user auth is on and no admin exists. */
  readonly adminPassword: string | null;
  readonly sessionTtlSeconds: number;
  /** Failure counts are forgotten this long after the last failure. */
  readonly loginWindowSeconds: number;
  /** Failures of one account from one address before that pair must wait. */
  readonly loginBackoffAfter: number;
  /** The first wait; it doubles with each further failure of the pair. */
  readonly loginBackoffSeconds: number;
  readonly loginBackoffMaxSeconds: number;
  /** Failures of one account from any addresses before the account must wait. */
  readonly loginAccountBackoffAfter: number;
  /** The account's wait stops doubling here: short, since the owner waits it too. */
  readonly loginAccountBackoffMaxSeconds: number;
  /** Failures from one address, any accounts, before that address waits out the window. */
  readonly loginMaxFailuresPerAddress: number;
  /** How often key `lastUsedAt` marks are written (batched, not one write per request). */
  readonly keyUsageFlushMs: number;
}

export function readAuth(r: EnvReader): AuthConfig {
  const useUserAuth = r.bool('USE_USER_AUTH', false);
  const useApiKeys = r.bool('USE_API_KEYS', false);
  const auth: AuthConfig = {
    useUserAuth,
    useApiKeys,
    multiTenant: r.bool('MULTI_TENANT', false),
    capabilityEnforcement: r.oneOf('CAPABILITY_ENFORCEMENT', ['enforce', 'log-only'] as const, 'enforce'),
    apiDocs: r.oneOf(
      'API_DOCS',
      ['public', 'authenticated', 'off'] as const,
      useUserAuth || useApiKeys ? 'authenticated' : 'public',
    ),
    bootstrapApiKey: r.optional('TAPYARD_BOOTSTRAP_API_KEY'),
    adminPassword: r.optional('TAPYARD_ADMIN_PASSWORD'),
    sessionTtlSeconds: r.int('SESSION_TTL_SECONDS', 8 * 3600, 60, 30 * 86400),
    loginWindowSeconds: r.int('LOGIN_WINDOW_SECONDS', 900, 1, 86400),
    loginBackoffAfter: r.int('LOGIN_BACKOFF_AFTER', 3, 1, 1000),
    loginBackoffSeconds: r.int('LOGIN_BACKOFF_SECONDS', 1, 1, 3600),
    loginBackoffMaxSeconds: r.int('LOGIN_BACKOFF_MAX_SECONDS', 900, 1, 86400),
    loginAccountBackoffAfter: r.int('LOGIN_ACCOUNT_BACKOFF_AFTER', 5, 1, 1000),
    loginAccountBackoffMaxSeconds: r.int('LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS', 5, 1, 300),
    loginMaxFailuresPerAddress: r.int('LOGIN_MAX_FAILURES_PER_ADDRESS', 20, 1, 100000),
    keyUsageFlushMs: r.int('KEY_USAGE_FLUSH_MS', 15000, 100, 3600000),
  };
  checkAuth(r, auth);
  return auth;
}

/** Combinations that cannot work; values are never echoed (they are secrets). */
function checkAuth(r: EnvReader, auth: AuthConfig): void {
  if (auth.multiTenant && !auth.useApiKeys) {
    r.problems.push(
      'MULTI_TENANT=true needs USE_API_KEYS=true: the tenant of a request is found from its API key',
    );
  }
  if (auth.bootstrapApiKey !== null && auth.bootstrapApiKey.length < 24) {
    r.problems.push('TAPYARD_BOOTSTRAP_API_KEY must be at least 24 characters (use `openssl rand -hex 24`)');
  }
  if (auth.adminPassword !== null && auth.adminPassword.length < 12) {
    r.problems.push('TAPYARD_ADMIN_PASSWORD must be at least 12 characters');
  }
}
