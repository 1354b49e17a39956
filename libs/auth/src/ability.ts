import { AbilityBuilder, MongoAbility, createMongoAbility, subject as asSubject } from '@casl/ability';
import { Action, FULL_ACCESS, Resource, parseCapability } from './capability';

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
