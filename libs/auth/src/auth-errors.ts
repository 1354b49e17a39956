import type { DomainCode } from '@tapyard/core';

/** The domain codes of access errors (keys, users, tenants, grants): the error body's `code`. */
export const AuthErrorCode = {
  /** The caller does not hold every capability it grants, rotates or revokes. */
  GrantRefused: 'auth.grant_refused',
  /** The caller is known but lacks the capability the request needs. */
  CapabilityMissing: 'auth.capability_missing',
  /** No credentials, or credentials that are not (or no longer) valid. */
  AuthenticationRequired: 'auth.authentication_required',
  LoginFailed: 'auth.login_failed',
  /** A login-session write without its CSRF token. */
  CsrfFailed: 'auth.csrf_failed',
  /** A route a tap run (through the egress proxy) may not call. */
  TapRunRefused: 'auth.tap_run_refused',
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
  /** Tenants are managed only in multi-tenant mode, from the operator environment. */
  OperatorOnly: 'tenant.operator_only',
} as const satisfies Record<string, DomainCode>;
