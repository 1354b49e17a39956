import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { snowflakeEndpoint } from './snowflake/endpoint';

/**
 * What the destinations refuse in a secret as it is saved (`PUT /secrets/{name}`), so that a secret
 * no loader would use answers 400 naming its field rather than failing its first job. A secret is
 * taken for a destination's by its fields (secrets are not typed): `account` with `warehouse` is
 * Snowflake's. The loaders check the same again on every load (a secret saved before a rule existed).
 */
@Injectable()
export class DestinationSecretChecks {
  private readonly policy: EgressPolicy;

  constructor(@Inject(CONFIG) config: TapyardConfig) {
    this.policy = new EgressPolicy(config.egressAllow);
  }

  /** Throws ValidationError naming the field; a body that is not fields of text is the Secrets API's to refuse. */
  check(name: string, fields: unknown): void {
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return;
    const f = fields as Record<string, unknown>;
    if (!Object.values(f).every((v) => typeof v === 'string')) return;
    if (Object.hasOwn(f, 'account') && Object.hasOwn(f, 'warehouse')) {
      snowflakeEndpoint(f as Record<string, string>, (h, p) => this.policy.isAllowListed(h, p), name);
    }
  }
}
