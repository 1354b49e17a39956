import type { DomainCode } from '@tapyard/core';
import type { AppAbility, ScopeFields } from './ability';
import type { Action, Resource } from './capability';

/** Who is asking, for checks made past the entry point (a tap's grant). */
export interface Caller {
  name: string;
  capabilities: readonly string[];
  ability: AppAbility;
}

/**
 * The caller's access as the policies of each resource see it. The API builds one per request and
 * per assistant tool call, so a policy's refusal is audited under the entry point it came through;
 * an anonymous caller (authentication off) passes every check and has no `caller`.
 */
export interface AccessCheck {
  /** Throws a 403 naming the capability when the caller lacks it (for this scope, when fields are given). */
  require(action: Action, resource: Resource, fields?: ScopeFields, why?: string): void;
  /**
   * Throws a 404 with `hiddenMessage` and `hiddenCode` (existence is not revealed: the message and domain
   * code of a real absence) when the caller may not act on it.
   */
  assertVisible(
    action: Action,
    resource: Resource,
    fields: ScopeFields,
    hiddenMessage: string,
    hiddenCode?: DomainCode,
  ): void;
  /**
   * Whether the caller holds the capability over the whole environment (no scope: `pipeline:update`,
   * `pipeline:*`, `*:*`), for rights a scoped holder does not get whatever it names. True for an
   * anonymous caller, and in log-only mode (with a `would-deny` line) as every check is there.
   */
  holdsUnscoped(action: Action, resource: Resource): boolean;
  readonly caller: Caller | null;
}
