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
  readonly caller: Caller | null;
}
