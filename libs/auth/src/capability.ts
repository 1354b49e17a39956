import { ErrorDetail, ValidationError } from '@tapyard/core';
import { AuthErrorCode } from './auth-errors';

/**
 * Capabilities are `resource:action[:scope]`. A scope restricts by container (catalog, database,
 * collection), by type or by ownership, never by a leaf resource name: `pipeline:read:catalog=sales`.
 * `*` stands for every resource or every action; `*:*` is the legacy full access.
 */
export const RESOURCES = [
  'pipeline',
  'job',
  'document',
  'search',
  'tap',
  'config',
  'metadata',
  'secret',
  'key',
  'user',
  'platform',
  'assistant',
  'codegen',
  'incident',
] as const;
export type Resource = (typeof RESOURCES)[number];

/** `use`: hand a resource to code that runs (a secret named in a tap); as strong as reading it. */
export const ACTIONS = [
  'read',
  'create',
  'update',
  'delete',
  'upload',
  'run',
  'vector',
  'query',
  'use',
] as const;
export type Action = (typeof ACTIONS)[number];

export const SCOPE_KEYS = ['catalog', 'database', 'collection', 'type', 'owner'] as const;
export type ScopeKey = (typeof SCOPE_KEYS)[number];

export const FULL_ACCESS = '*:*';

export interface Capability {
  /** `all` for `*`. */
  resource: Resource | 'all';
  /** `manage` for `*` (CASL's "any action"). */
  action: Action | 'manage';
  scope: { key: ScopeKey; value: string } | null;
}

const SCOPE_VALUE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Parses one capability string, or returns the reason it is not one. */
export function parseCapability(text: string): Capability | string {
  const parts = text.split(':');
  if (parts.length < 2 || parts.length > 3) return 'must look like resource:action or resource:action:scope';
  const [resource, action, scope] = parts;
  if (resource !== '*' && !(RESOURCES as readonly string[]).includes(resource)) {
    return `unknown resource '${resource}' (one of *, ${RESOURCES.join(', ')})`;
  }
  if (action !== '*' && !(ACTIONS as readonly string[]).includes(action)) {
    return `unknown action '${action}' (one of *, ${ACTIONS.join(', ')})`;
  }
  let parsedScope: Capability['scope'] = null;
  if (scope !== undefined) {
    const eq = scope.indexOf('=');
    const key = scope.slice(0, eq);
    const value = scope.slice(eq + 1);
    if (eq < 0 || !(SCOPE_KEYS as readonly string[]).includes(key)) {
      return `scope must be key=value with key one of ${SCOPE_KEYS.join(', ')}`;
    }
    if (!SCOPE_VALUE.test(value)) return `scope value '${value.slice(0, 40)}' is not a valid name`;
    if (key === 'owner' && value !== 'self') return 'the only ownership scope is owner=self';
    parsedScope = { key: key as ScopeKey, value };
  }
  return {
    resource: resource === '*' ? 'all' : (resource as Resource),
    action: action === '*' ? 'manage' : (action as Action),
    scope: parsedScope,
  };
}

/** Validates a capability list from a request, naming every bad entry; returns it de-duplicated. */
export function validateCapabilities(list: readonly string[], field = 'capabilities'): string[] {
  const details: ErrorDetail[] = [];
  list.forEach((c, i) => {
    const parsed = parseCapability(c);
    if (typeof parsed === 'string') details.push({ field: `${field}[${i}]`, problem: parsed });
  });
  if (details.length > 0) {
    throw new ValidationError(`${details[0].field} ${details[0].problem}`, details).coded(
      AuthErrorCode.InvalidCapability,
    );
  }
  if (list.length === 0)
    throw new ValidationError(`${field} must hold at least one capability`).coded(
      AuthErrorCode.InvalidCapability,
    );
  return [...new Set(list)];
}

/**
 * Does holding `held` include everything `wanted` allows? Same resource (or `*`), same action (or
 * `*`), and no scope or exactly the same one: a scoped holder cannot pass on an unscoped or
 * differently scoped capability, and `*` is covered by `*` only, so `*:*` comes from `*:*` alone.
 * Deliberately no union reasoning (eight explicit actions do not make `*`): `*` also covers actions
 * added later.
 */
export function covers(held: Capability, wanted: Capability): boolean {
  return (
    (held.resource === 'all' || held.resource === wanted.resource) &&
    (held.action === 'manage' || held.action === wanted.action) &&
    (held.scope === null ||
      (wanted.scope !== null &&
        held.scope.key === wanted.scope.key &&
        held.scope.value === wanted.scope.value))
  );
}

/**
 * The capabilities of `wanted` that no capability of `held` covers, in their given order. Entries
 * that do not parse are never covered (a stored list is validated on write; a bad one never widens).
 */
export function uncovered(held: readonly string[], wanted: readonly string[]): string[] {
  const holder = held.map(parseCapability).filter((c): c is Capability => typeof c !== 'string');
  return wanted.filter((text) => {
    const c = parseCapability(text);
    return typeof c === 'string' || !holder.some((h) => covers(h, c));
  });
}
