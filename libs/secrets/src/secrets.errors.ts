import { DomainCode, InternalError, NotFoundError } from '@tapyard/core';

/** The domain codes of secret errors: the error body's `code`. */
export const SecretErrorCode = {
  NotFound: 'secret.not_found',
  /** A name of the platform's access state (API keys, tenant mappings). */
  Reserved: 'secret.reserved',
  InvalidName: 'secret.invalid_name',
  /** Not an object of string fields within the limits. */
  InvalidBody: 'secret.invalid_body',
  /** The configured master key cannot open the stored secret. */
  Unreadable: 'secret.unreadable',
} as const satisfies Record<string, DomainCode>;

export class SecretNotFoundError extends NotFoundError {
  override domainCode: DomainCode = SecretErrorCode.NotFound;
  constructor(name: string) {
    super(`secret '${name}' does not exist`);
  }
}

/** The row exists but the configured master key cannot open it (wrong key or tampered row). */
export class SecretUnreadableError extends InternalError {
  override domainCode: DomainCode = SecretErrorCode.Unreadable;
  constructor(name: string) {
    super(`secret '${name}' cannot be decrypted with the configured master key`);
  }
}
