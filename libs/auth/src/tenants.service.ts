import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import {
  CONFIG,
  ENVIRONMENT_NAME,
  LOGGER,
  NotFoundError,
  TapyardConfig,
  ValidationError,
  errorMessage,
} from '@tapyard/core';
import { TENANT_MAPPINGS_SECRET } from '@tapyard/secrets';
import { KeyDigests, PresentedKey, isHmacDigest, isLegacyDigest, matchesDigest } from './key-values';
import { SecretState } from './secret-state';
import { AuthErrorCode } from './auth-errors';
import { Grantor, assertMayGrant } from './ability';
import { FULL_ACCESS } from './capability';

export { TENANT_MAPPINGS_SECRET };
/** A tenant's name is an environment's: one rule, which TAP_EGRESS_ALLOW's `<environment>=` scopes rely on. */
const TENANT = ENVIRONMENT_NAME;

/**
 * Multi-tenant mode: which tenant environment an API key acts in. Field names of `api-key-mappings`
 * are HMAC digests of key values (`hmac:<hex>`, what Tapyard writes), SHA-256 digests from before,
 * or plain key values an operator wrote by hand, digested on read; the latter two are rewritten as
 * HMAC the first time their key is used. A mapping to the operator environment is never honoured:
 * the operator's keys live in its own key map, and a hand-made entry must not become operator access.
 */
@Injectable()
export class TenantsService {
  constructor(
    private readonly state: SecretState,
    private readonly digests: KeyDigests,
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  get operatorEnvironment(): string {
    return this.config.environment;
  }

  async tenantOf(keyValue: string): Promise<string | null> {
    const presented = this.digests.presented(keyValue);
    const fields = await this.state.read(this.operatorEnvironment, TENANT_MAPPINGS_SECRET);
    let found: { tenant: string; field: string } | null = null;
    let operator = false;
    // Every field is compared, without stopping at a match (no timing signal of where it is).
    for (const [field, env] of Object.entries(fields)) {
      if (!matchesDigest(this.storedDigest(field), presented)) continue;
      if (env === this.operatorEnvironment) operator = true;
      else if (TENANT.test(env)) found = { tenant: env, field };
    }
    if (operator) {
      this.logger.warn(
        { secret: TENANT_MAPPINGS_SECRET },
        'a tenant mapping names the operator environment; it is ignored',
      );
    }
    if (found && !isHmacDigest(found.field)) await this.upgrade(found.field, found.tenant, presented);
    return found?.tenant ?? null;
  }

  /**
   * `tenant` lets the operator environment issue a tenant's first key; tenants issue only their own.
   * What a caller holds applies in its own environment, so reaching into a tenant takes full access.
   */
  issuingEnvironment(environment: string, tenant: string | undefined, grantor: Grantor): string {
    if (tenant === undefined) return environment;
    this.validateTarget(tenant);
    this.assertOperator(environment, grantor, `issue keys into tenant '${tenant}'`);
    return tenant;
  }

  /** Acts on tenants from outside them: multi-tenant mode, the operator environment, full access. */
  assertOperator(environment: string, grantor: Grantor, act: string): void {
    if (!this.config.auth.multiTenant) {
      throw new ValidationError('tenants exist only with MULTI_TENANT=true').coded(
        AuthErrorCode.OperatorOnly,
      );
    }
    if (environment !== this.operatorEnvironment) {
      throw new ValidationError('tenants are managed only by callers of the operator environment').coded(
        AuthErrorCode.OperatorOnly,
      );
    }
    assertMayGrant(grantor, [FULL_ACCESS], act);
  }

  /** An operator maps a key value made elsewhere to a tenant; only its HMAC digest is stored. */
  async mapValue(environment: string, grantor: Grantor, keyValue: string, tenant: string): Promise<void> {
    this.assertOperator(environment, grantor, `map keys to tenant '${tenant}'`);
    await this.map(this.digests.digest(keyValue), tenant);
  }

  /** An operator removes every mapping of a key value. */
  async unmapValue(environment: string, grantor: Grantor, keyValue: string): Promise<void> {
    this.assertOperator(environment, grantor, 'remove tenant mappings');
    await this.unmap(keyValue);
  }

  /** Maps a key digest (as Tapyard stores it) to a tenant environment. */
  async map(keyDigest: string, tenant: string): Promise<void> {
    this.validateTarget(tenant);
    await this.state.mutate(this.operatorEnvironment, TENANT_MAPPINGS_SECRET, (fields) => {
      fields[keyDigest] = tenant;
    });
  }

  /** Removes the mapping of one digest Tapyard wrote (a key whose record was never committed). */
  async unmapDigest(keyDigest: string): Promise<void> {
    await this.state.mutate(this.operatorEnvironment, TENANT_MAPPINGS_SECRET, (fields) => {
      delete fields[keyDigest];
    });
  }

  /** Removes every mapping of a key value, whatever form it was stored in; 404 when there is none. */
  async unmap(keyValue: string): Promise<void> {
    const presented = this.digests.presented(keyValue);
    await this.state.mutate(this.operatorEnvironment, TENANT_MAPPINGS_SECRET, (fields) => {
      const mapped = Object.keys(fields).filter((f) => matchesDigest(this.storedDigest(f), presented));
      if (mapped.length === 0)
        throw new NotFoundError('that key is not mapped to a tenant').coded(AuthErrorCode.TenantNotMapped);
      for (const f of mapped) delete fields[f];
    });
  }

  /**
   * A tenant environment a key may be mapped to: a valid name, never the operator's own, and no `_`:
   * bucket names turn `_` into `-`, so `a_b` would share the buckets of `a-b` (or of the operator).
   */
  validateTarget(tenant: string): void {
    validateTenant(tenant);
    if (tenant === this.operatorEnvironment) {
      throw new ValidationError(
        'tenant names the operator environment: keys of the operator environment are not mapped',
      ).coded(AuthErrorCode.InvalidTenant);
    }
    if (tenant.includes('_')) {
      throw new ValidationError(
        `tenant '${tenant}' holds '_': tenant names use a-z, 0-9 and - (bucket names turn _ into -, so ` +
          `'${tenant}' would share the buckets of '${tenant.replace(/_/g, '-')}')`,
      ).coded(AuthErrorCode.InvalidTenant);
    }
    if (tenant === this.operatorEnvironment.replace(/_/g, '-')) {
      throw new ValidationError(
        `tenant '${tenant}' would share the buckets of the operator environment`,
      ).coded(AuthErrorCode.InvalidTenant);
    }
  }

  private storedDigest(field: string): string {
    return isHmacDigest(field) || isLegacyDigest(field) ? field : this.digests.digest(field);
  }

  /** Rewrites a SHA-256 or plain field name as the HMAC digest; best effort, retried on next use. */
  private async upgrade(field: string, tenant: string, presented: PresentedKey): Promise<void> {
    try {
      await this.state.mutate(this.operatorEnvironment, TENANT_MAPPINGS_SECRET, (fields) => {
        if (fields[field] !== tenant) return;
        delete fields[field];
        fields[presented.hmac] = tenant;
      });
      this.logger.info({ tenant }, 'tenant mapping digest upgraded to HMAC');
    } catch (err) {
      this.logger.warn(
        { tenant, err: errorMessage(err) },
        'tenant mapping not upgraded; retried on next use',
      );
    }
  }
}

/** The tenant environments named in the fields of `api-key-mappings`. */
export function tenantEnvironments(mappings: Record<string, string>): string[] {
  return [...new Set(Object.values(mappings).filter((t) => TENANT.test(t)))].sort();
}

export function validateTenant(tenant: string): void {
  if (!TENANT.test(tenant)) {
    throw new ValidationError(
      `tenant '${tenant.slice(0, 60)}' is invalid: an environment name starts with a lowercase letter and holds a-z, 0-9, _ and - (max 40)`,
    ).coded(AuthErrorCode.InvalidTenant);
  }
}
