import type { DomainCode } from '@tapyard/core';

/** The domain codes of tap errors: the error body's `code`. */
export const TapErrorCode = {
  NotFound: 'tap.not_found',
  /** The secret holds the platform's access state. */
  SecretRefused: 'tap.secret_refused',
  /** The tap has no script (yet), or its stored script is missing. */
  NoScript: 'tap.no_script',
  /** A field that cannot change once set (tapType). */
  Invalid: 'tap.invalid',
  InvalidScriptPath: 'tap.invalid_script_path',
  /** A saved script that Python cannot parse. */
  ScriptSyntax: 'tap.script_syntax',
  /** A cron expression that never fires again. */
  InvalidCron: 'tap.invalid_cron',
  /** `timezone` is not an IANA zone name. */
  InvalidTimezone: 'tap.invalid_timezone',
  /** The target pipeline is outside the tap's grant, or not a pipeline this kind of tap can feed. */
  TargetRefused: 'tap.target_refused',
  TargetMissing: 'tap.target_missing',
  /** The tap's secret does not exist, or has a field that cannot be an environment variable. */
  SecretInvalid: 'tap.secret_invalid',
  InvalidPackages: 'tap.invalid_packages',
  NoCodeRepository: 'tap.no_code_repository',
  LedgerEntryNotFound: 'tap.ledger_entry_not_found',
  /** PUT /tap/state with a state that is not an object (or null), or too large. */
  InvalidState: 'tap.invalid_state',
} as const satisfies Record<string, DomainCode>;
