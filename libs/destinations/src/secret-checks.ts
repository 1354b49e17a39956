import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { SecretsService } from '@tapyard/secrets';
import { snowflakeEndpoint } from './snowflake/endpoint';

/**
 * What the destinations refuse in a secret as it is saved (`PUT /secrets/{name}`), so that a secret
 * no loader would use answers 400 naming its field rather than failing its first job. A secret is
 * taken for a destination's by its fields (secrets are not typed): `account` with `warehouse` is
 * Snowflake's. The loaders check the same again on every load (a secret saved before a rule existed).
 */
@Injectable()
export class DestinationSecretChecks implements OnModuleInit {
  private readonly policy: EgressPolicy;

  constructor(
    @Inject(CONFIG) config: TapyardConfig,
    private readonly secrets: SecretsService,
  ) {
    this.policy = new EgressPolicy(config.egressAllow);
  }

  onModuleInit(): void {
    this.secrets.addWriteCheck((name, fields, environment) => this.check(name, fields, environment));
  }

  /**
   * Throws ValidationError naming the field (the Secrets API has checked the fields are text). An
   * endpoint must be allow-listed for `environment`, the one the secret is saved in.
   */
  check(name: string, fields: Record<string, string>, environment: string): void {
    if (Object.hasOwn(fields, 'account') && Object.hasOwn(fields, 'warehouse')) {
      const policy = this.policy.for(environment);
      snowflakeEndpoint(fields, (h, p) => policy.isAllowListed(h, p), name, environment);
    }
  }
}
