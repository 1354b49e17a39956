/** Who is signed in, as far as tenant administration cares (`GET /auth/me`). */
interface Caller {
  kind: string;
  capabilities: readonly string[];
}

/**
 * Tenant administration (issuing into a tenant, mapping a value) needs `*:*` exactly: a key:create
 * capability is not enough, since what a key holds applies in its own environment only. Null when
 * the caller may; otherwise the sentence beside the disabled forms.
 */
export function tenantRefusal(me: Caller | null): string | null {
  if (!me) return 'Not signed in.';
  if (me.kind === 'anonymous' || me.capabilities.includes('*:*')) return null;
  return 'Administering tenants needs full access (*:*) in the operator environment.';
}
