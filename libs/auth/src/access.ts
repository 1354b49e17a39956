import { Logger } from 'pino';
import type { Identity } from './authenticator';
import { DomainCode, ForbiddenError, NotFoundError } from '@tapyard/core';
import { ScopeFields, canOn, canSome } from './ability';
import { AccessCheck } from './access-check';
import { Action, Resource } from './capability';
import { AuthErrorCode } from './auth-errors';
export type Outcome = 'grant' | 'would-deny' | 'deny' | 'unmapped';

/** One concrete resource a request touches, and what to answer when the caller may not see it. */
export interface ScopeTarget {
  fields: ScopeFields;
  /** The 404 message: a resource outside the caller's scope is answered as absent, not forbidden. */
  hiddenMessage: string;
  /** The domain code of the same resource's real absence (`pipeline.not_found`), so the code does not tell them apart. */
  hiddenCode?: DomainCode;
}

/** The 404 a resource outside the caller's scope answers: the message and domain code of a real absence. */
export function hiddenAbsence(message: string, code?: DomainCode): NotFoundError {
  const err = new NotFoundError(message);
  return code ? err.coded(code) : err;
}

export interface AuditFields {
  route: string;
  required: string;
  scope?: ScopeFields;
}

/** Writes the spec's one line per authenticated request (route, required, key, legacy, outcome). */
export class AuditLog {
  constructor(private readonly logger: Logger) {}

  write(identity: Identity, f: AuditFields, outcome: Outcome): void {
    const line = { ...f, key: identity.name, legacy: identity.legacy, outcome };
    if (outcome === 'grant') this.logger.info(line, 'access');
    else this.logger.warn(line, 'access');
  }
}

/**
 * What the current caller may see and do, for handlers that check per item (listings) or learn the
 * resource only while handling (an upload's pipeline field). Anonymous callers may do everything.
 */
export class Access implements AccessCheck {
  constructor(
    readonly identity: Identity,
    private readonly enforce: boolean,
    private readonly audit: AuditLog,
    private readonly route: string,
  ) {}

  private get checked(): boolean {
    return this.identity.kind !== 'anonymous';
  }

  /** The environment it acts in, and whether it holds `*:*`, which alone reaches into tenants' places. */
  get viewer(): { environment: string; fullAccess: boolean } {
    return { environment: this.identity.environment, fullAccess: this.identity.legacy };
  }

  /** The items the caller may see; in log-only mode all of them, with one `would-deny` line if any was hidden. */
  filter<T>(items: T[], action: Action, resource: Resource, fieldsOf: (item: T) => ScopeFields): T[] {
    if (!this.checked) return items;
    const visible = items.filter((i) => canOn(this.identity.ability, action, resource, fieldsOf(i)));
    if (visible.length === items.length || this.enforce) return visible;
    this.audit.write(this.identity, { route: this.route, required: `${resource}:${action}` }, 'would-deny');
    return items;
  }

  /** Throws a 404 (not a 403: existence is not revealed) when the caller may not act on this resource. */
  assertVisible(
    action: Action,
    resource: Resource,
    fields: ScopeFields,
    hiddenMessage: string,
    hiddenCode?: DomainCode,
  ): void {
    if (!this.permits(action, resource, fields)) throw hiddenAbsence(hiddenMessage, hiddenCode);
  }

  /** Throws a 403 naming the capability when the caller lacks it (for this scope, when fields are given). */
  require(action: Action, resource: Resource, fields: ScopeFields = {}, why = 'for this request'): void {
    if (!this.permits(action, resource, fields)) {
      throw new ForbiddenError(
        `'${this.identity.name}' lacks the capability ${resource}:${action} ${why}`,
      ).coded(AuthErrorCode.CapabilityMissing);
    }
  }

  /**
   * Throws a 403 naming the capability unless the caller holds it in some scope: for work that touches
   * no stored resource (as the guard's `none`) but is only done on some paths of a route.
   */
  requireSome(action: Action, resource: Resource, why = 'for this request'): void {
    if (!this.checked || canSome(this.identity.ability, action, resource)) return;
    this.audit.write(
      this.identity,
      { route: this.route, required: `${resource}:${action}` },
      this.enforce ? 'deny' : 'would-deny',
    );
    if (!this.enforce) return;
    throw new ForbiddenError(
      `'${this.identity.name}' lacks the capability ${resource}:${action} ${why}`,
    ).coded(AuthErrorCode.CapabilityMissing);
  }

  /** Whether the caller may act; a refusal is audited, and in log-only mode lets the call through. */
  permits(action: Action, resource: Resource, fields: ScopeFields): boolean {
    if (!this.checked || canOn(this.identity.ability, action, resource, fields)) return true;
    const f = { route: this.route, required: `${resource}:${action}`, scope: fields };
    this.audit.write(this.identity, f, this.enforce ? 'deny' : 'would-deny');
    return !this.enforce;
  }

  holdsUnscoped(action: Action, resource: Resource): boolean {
    if (!this.checked || canOn(this.identity.ability, action, resource, {})) return true;
    if (this.enforce) return false;
    this.audit.write(this.identity, { route: this.route, required: `${resource}:${action}` }, 'would-deny');
    return true;
  }

  /** The caller for checks made past the guard (taps' grants); null for anonymous callers. */
  get caller(): { name: string; capabilities: readonly string[]; ability: Identity['ability'] } | null {
    return this.checked ? this.identity : null;
  }
}
