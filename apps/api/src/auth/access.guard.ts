import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import { timingSafeEqual } from 'node:crypto';
import { Logger } from 'pino';
import {
  Access,
  AuditFields,
  AuditLog,
  AuthErrorCode,
  AuthResult,
  Authenticator,
  CSRF_HEADER,
  Identity,
  canOn,
  canSome,
  hiddenAbsence,
} from '@tapyard/auth';
import { CONFIG, DomainCode, ForbiddenError, LOGGER, TapyardConfig, UnauthorizedError } from '@tapyard/core';
import { TAP_RUN_HEADER } from '@tapyard/egress';
import { TapyardRequest } from '../http/request-context';
import { ACCESS_RULE, AccessRule } from './access-rule';
import { credentialsOf } from './credentials';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

type Decision = { grant: true } | { grant: false; hiddenMessage?: string; hiddenCode?: DomainCode };

/**
 * The one gate of every route: authenticates the caller (key or session), selects the environment
 * (the tenant's in multi-tenant mode), checks the route's declared capability with CASL, including
 * its scope, writes the audit line, and enforces or only logs (CAPABILITY_ENFORCEMENT=log-only).
 */
@Injectable()
export class AccessGuard implements CanActivate {
  private readonly audit: AuditLog;
  private readonly enforce: boolean;

  constructor(
    private readonly reflector: Reflector,
    private readonly refs: ModuleRef,
    private readonly authenticator: Authenticator,
    @Inject(CONFIG) config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.audit = new AuditLog(logger);
    this.enforce = config.auth.capabilityEnforcement === 'enforce';
  }

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<TapyardRequest>();
    const rule = this.reflector.getAllAndOverride<AccessRule | undefined>(ACCESS_RULE, [
      ctx.getHandler(),
      ctx.getClass(),
    ]);
    const route = `${req.method} ${req.baseUrl}${(req.route as { path?: string } | undefined)?.path ?? req.path}`;
    const auth = this.authenticator.enabled
      ? await this.authenticator.authenticate(credentialsOf(req))
      : ({ ok: true, identity: this.authenticator.anonymous() } satisfies AuthResult);

    if (rule?.kind === 'public') {
      // The egress proxy refuses these routes to tap runs already; the mark keeps it so should the
      // proxy's list ever widen. Only the proxy sets it for scripts, and it can only take rights away.
      if (req.header(TAP_RUN_HEADER) !== undefined && !SAFE_METHODS.has(req.method))
        throw new ForbiddenError(`a tap run may not call ${route}`).coded(AuthErrorCode.TapRunRefused);
      this.attach(req, auth.ok ? auth.identity : this.authenticator.anonymous(), route);
      if (rule.sessionWrite && auth.ok) this.checkCsrf(req, auth.identity);
      return true;
    }
    if (!auth.ok) {
      this.logger.warn({ route, reason: auth.reason, label: auth.label }, 'authentication failed');
      throw new UnauthorizedError(
        auth.reason === 'missing credentials'
          ? 'authentication required: send an API key in the x-api-key header or log in'
          : auth.reason === 'unknown session'
            ? 'the login session is not valid (expired or logged out): log in again'
            : 'the API key is not valid (unknown, rotated out or revoked)',
      ).coded(AuthErrorCode.AuthenticationRequired);
    }
    const identity = auth.identity;
    this.attach(req, identity, route);
    if (identity.kind === 'anonymous') return true;
    this.checkCsrf(req, identity);

    if (!rule) return this.conclude(identity, { route, required: 'none' }, { grant: false }, 'unmapped');
    if (rule.kind === 'signed-in')
      return this.conclude(identity, { route, required: 'signed-in' }, { grant: true });
    const f: AuditFields = { route, required: rule.capability };
    return this.conclude(identity, f, await this.decide(rule, identity, req, f));
  }

  private async decide(
    rule: Extract<AccessRule, { kind: 'capability' }>,
    identity: Identity,
    req: TapyardRequest,
    f: AuditFields,
  ): Promise<Decision> {
    const { action, resource, scope } = rule;
    if (!canSome(identity.ability, action, resource)) return { grant: false };
    if (scope === 'filtered' || scope === 'in-handler' || scope === 'none') return { grant: true };
    if (scope === 'environment') return { grant: canOn(identity.ability, action, resource, {}) };
    for (const target of await scope(req, this.refs)) {
      if (!canOn(identity.ability, action, resource, target.fields)) {
        f.scope = target.fields;
        return { grant: false, hiddenMessage: target.hiddenMessage, hiddenCode: target.hiddenCode };
      }
    }
    return { grant: true };
  }

  private conclude(identity: Identity, f: AuditFields, d: Decision, unmapped?: 'unmapped'): boolean {
    const outcome = d.grant ? 'grant' : (unmapped ?? (this.enforce ? 'deny' : 'would-deny'));
    this.audit.write(identity, f, outcome);
    if (d.grant || !this.enforce) return true;
    if (d.hiddenMessage) throw hiddenAbsence(d.hiddenMessage, d.hiddenCode);
    throw new ForbiddenError(
      unmapped
        ? `route ${f.route} declares no capability and is closed`
        : `'${identity.name}' lacks the capability ${f.required} for this request`,
    ).coded(AuthErrorCode.CapabilityMissing);
  }

  private attach(req: TapyardRequest, identity: Identity, route: string): void {
    req.environment = identity.environment;
    req.access = new Access(identity, this.enforce, this.audit, route);
  }

  /** Cookie-authenticated writes must echo the session's CSRF token (a cross-site form cannot read it). */
  private checkCsrf(req: TapyardRequest, identity: Identity): void {
    if (!identity.session || SAFE_METHODS.has(req.method)) return;
    const sent = Buffer.from(req.header(CSRF_HEADER) ?? '');
    const expected = Buffer.from(identity.session.csrf);
    if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
      this.logger.warn({ route: `${req.method} ${req.path}`, key: identity.name }, 'csrf check failed');
      throw new ForbiddenError(
        `missing or wrong ${CSRF_HEADER} header for a write made with a login session`,
      ).coded(AuthErrorCode.CsrfFailed);
    }
  }
}
