import {
  Access,
  Action,
  AuditLog,
  AuthErrorCode,
  Identity,
  Resource,
  ScopeFields,
  ScopeTarget,
  canOn,
  canSome,
  hiddenAbsence,
} from '@tapyard/auth';
import { ForbiddenError } from '@tapyard/core';

/** How a tool's resource is scoped, as the matching route declares it (see ScopeCheck). */
export type ToolScope = 'environment' | 'filtered' | 'none' | ScopeTarget[];

/**
 * The capability check of a tool call, decided as the access guard decides for the matching route
 * (any scope → 403 when lacking the capability altogether; a target outside the caller's scope → 404
 * as if missing), audited with the caller's identity and the tool's name.
 */
export class ToolGate {
  constructor(
    private readonly identity: Identity,
    private readonly enforce: boolean,
    private readonly audit: AuditLog,
  ) {}

  /** Checks, audits, and returns the Access a tool uses for its own per-item checks. */
  check(tool: string, capability: `${Resource}:${Action}`, scope: ToolScope): Access {
    const route = `assistant tool ${tool}`;
    const access = new Access(this.identity, this.enforce, this.audit, route);
    if (this.identity.kind === 'anonymous') return access;
    const [resource, action] = capability.split(':') as [Resource, Action];
    const f: { route: string; required: string; scope?: ScopeFields } = { route, required: capability };
    let grant = canSome(this.identity.ability, action, resource);
    let hidden: ScopeTarget | undefined;
    if (grant && scope === 'environment') grant = canOn(this.identity.ability, action, resource, {});
    if (grant && Array.isArray(scope)) {
      for (const t of scope) {
        if (!canOn(this.identity.ability, action, resource, t.fields)) {
          grant = false;
          hidden = t;
          f.scope = t.fields;
          break;
        }
      }
    }
    this.audit.write(this.identity, f, grant ? 'grant' : this.enforce ? 'deny' : 'would-deny');
    if (grant || !this.enforce) return access;
    if (hidden) throw hiddenAbsence(hidden.hiddenMessage, hidden.hiddenCode);
    throw new ForbiddenError(`'${this.identity.name}' lacks the capability ${capability} for ${route}`).coded(
      AuthErrorCode.CapabilityMissing,
    );
  }
}
