import { ScopeFields } from '@tapyard/auth';

/** The fields capability scopes check on a tap: its catalog and its type. */
export function tapScope(tap: { catalog?: string | null; tapType?: string | null }): ScopeFields {
  return { catalog: tap.catalog ?? null, type: tap.tapType ?? 'structured' };
}
