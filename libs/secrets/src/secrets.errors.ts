import { InternalError, NotFoundError } from '@tapyard/core';

export class SecretNotFoundError extends NotFoundError {
  constructor(name: string) {
    super(`secret '${name}' does not exist`);
  }
}

/** The row exists but the configured master key cannot open it (wrong key or tampered row). */
export class SecretUnreadableError extends InternalError {
  constructor(name: string) {
    super(`secret '${name}' cannot be decrypted with the configured master key`);
  }
}
