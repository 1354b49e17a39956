import type { DomainCode } from '@tapyard/core';

/** The domain codes of access errors (keys, users, tenants, grants): the error body's `code`. */
export const AuthErrorCode = {
  /** The caller does not hold every capability it grants, rotates or revokes. */
  GrantRefused: 'auth.grant_refused',
  InvalidCapability: 'auth.invalid_capability',
  LoginRateLimited: 'auth.login_rate_limited',
  KeyExists: 'key.exists',
  KeyNotFound: 'key.not_found',
  KeyRevoked: 'key.revoked',
  /** A reserved or malformed label, or an unknown template. */
  InvalidKey: 'key.invalid',
  UserExists: 'user.exists',
  UserNotFound: 'user.not_found',
  /** The change would leave no admin. */
  LastAdmin: 'user.last_admin',
  InvalidUser: 'user.invalid',
  TenantNotMapped: 'tenant.not_mapped',
  InvalidTenant: 'tenant.invalid',
} as const satisfies Record<string, DomainCode>;
