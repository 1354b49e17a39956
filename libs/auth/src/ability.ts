import { AbilityBuilder, MongoAbility, createMongoAbility, subject as asSubject } from '@casl/ability';
import { ForbiddenError } from '@tapyard/core';
import { Action, FULL_ACCESS, Resource, parseCapability, uncovered } from './capability';
import { AuthErrorCode } from './auth-errors';

/** Fields of a concrete resource that scopes are checked against (catalog, database, type, owner...). */
export type ScopeFields = Record<string, string | null | undefined>;

// Actions and resources are validated when capabilities are parsed; CASL's string-typed default is enough.
export type AppAbility = MongoAbility;

/**
 * Builds the CASL ability of an identity. Scoped capabilities become conditions on the resource's
 * fields, so `pipeline:read:catalog=a` allows `read` of a pipeline whose `catalog` is `a` only.
 * `owner=self` compares the resource's `owner` with the identity name.
 */
export function buildAbility(capabilities: readonly string[], identity: string): AppAbility {
  const { can, build } = new AbilityBuilder<AppAbility>(createMongoAbility);
  for (const text of capabilities) {
    const c = parseCapability(text);
    if (typeof c === 'string') continue; // stored lists are validated on write; never widen on a bad entry
    if (c.scope === null) can(c.action, c.resource);
    else can(c.action, c.resource, { [c.scope.key]: c.scope.key === 'owner' ? identity : c.scope.value });
  }
  return build();
}

export function isLegacy(capabilities: readonly string[]): boolean {
  return capabilities.includes(FULL_ACCESS);
}

/** May the identity do `action` on some `resource`, in any scope? (CASL: rules with conditions count.) */
export function canSome(ability: AppAbility, action: Action, resource: Resource): boolean {
  return ability.can(action, resource);
}

/** May the identity do `action` on this concrete resource? An unscoped check passes `{}`. */
export function canOn(ability: AppAbility, action: Action, resource: Resource, fields: ScopeFields): boolean {
  return ability.can(action, asSubject(resource, { ...fields }));
}

/** Who hands out access: an identity's name (for the message) and what it holds. */
export interface Grantor {
  name: string;
  capabilities: readonly string[];
}

const NAMED_MISSING = 5;

/**
 * "Grant only what you hold": issuing a key, rotating one (its holder gets a fresh value), revoking
 * one, or giving a user a role hands out (or takes away) access, so the caller must hold all of it
 * itself (see `covers`). Refused with a 403 naming what the caller lacks. Enforced in log-only mode
 * too: that mode relaxes route checks, never escalation.
 */
export function assertMayGrant(grantor: Grantor, wanted: readonly string[], act: string): void {
  const missing = uncovered(grantor.capabilities, wanted);
  if (missing.length === 0) return;
  const more = missing.length > NAMED_MISSING ? ` and ${missing.length - NAMED_MISSING} more` : '';
  throw new ForbiddenError(
    `'${grantor.name}' cannot ${act}: it lacks ${missing.slice(0, NAMED_MISSING).join(', ')}${more}`,
  ).coded(AuthErrorCode.GrantRefused);
}
