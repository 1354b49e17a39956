import type { AccessCheck } from '@tapyard/auth';

/**
 * The one rule about naming a secret: whatever the name reaches (code in the sandbox, a sink sending
 * to an address it was given) receives the secret's values, so naming one needs secret:use, which is
 * as strong as reading it. `why` says what the name would reach, for the 403.
 */
export function requireSecretUse(access: AccessCheck, why: string): void {
  access.require('use', 'secret', {}, why);
}
