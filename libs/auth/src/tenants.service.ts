import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig, ValidationError } from '@tapyard/core';
import { hashKey, sameDigest } from './key-values';
import { TENANT_MAPPINGS_SECRET } from '@tapyard/secrets';
import { SecretState } from './secret-state';

export { TENANT_MAPPINGS_SECRET };
const TENANT = /^[a-z][a-z0-9_-]{0,39}$/;
const DIGEST = /^[0-9a-f]{64}$/;

/**
 * Multi-tenant mode: which tenant environment an API key acts in. Field names of `api-key-mappings`
 * are SHA-256 digests of key values (what Tapyard writes); a field holding a plain key value, as an
 * operator may write it by hand, is digested on read.
 */
@Injectable()
export class TenantsService {
  constructor(
    private readonly state: SecretState,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  get operatorEnvironment(): string {
    return this.config.environment;
  }

  async tenantOf(keyValue: string): Promise<string | null> {
    const digest = hashKey(keyValue);
    const fields = await this.state.read(this.operatorEnvironment, TENANT_MAPPINGS_SECRET);
    let tenant: string | null = null;
    for (const [name, env] of Object.entries(fields)) {
      const stored = DIGEST.test(name) ? name : hashKey(name);
      if (sameDigest(digest, stored) && TENANT.test(env)) tenant = env;
    }
    return tenant;
  }

  async map(keyDigest: string, tenant: string): Promise<void> {
    validateTenant(tenant);
    await this.state.mutate(this.operatorEnvironment, TENANT_MAPPINGS_SECRET, (fields) => {
      fields[keyDigest] = tenant;
    });
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
    );
  }
}
