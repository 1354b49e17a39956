import { Inject, Injectable } from '@nestjs/common';
import { RunKeys, runKeyCapabilities } from '@tapyard/auth';
import { CONFIG, NotFoundError, TapyardConfig, ValidationError } from '@tapyard/core';
import { SecretsService } from '@tapyard/secrets';
import { TapConfig } from './tap.types';
import { platformEndpoint } from './tap-processes';
import { assertTapSecret } from './tap-rules';
import { TapErrorCode } from './tap-errors';

/** The script's environment variables, which values are secret (masked in logs), and its run key. */
export interface ScriptEnv {
  /** The environment the run acts in: its egress allow-list entries are the script's. */
  environment: string;
  env: Record<string, string>;
  secrets: string[];
  /** Revoked when the run ends (it also expires by itself). */
  runKey: string | null;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * What a script sees: its secret's fields, the SERVICE_* variables (with a run key of its own when
 * API keys are on), and in test mode the test limit. Nothing of the platform's own environment.
 */
@Injectable()
export class TapEnvironment {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly secrets: SecretsService,
    private readonly runKeys: RunKeys,
  ) {}

  async build(environment: string, tap: TapConfig, testLimit: number, grant: string[]): Promise<ScriptEnv> {
    const env: Record<string, string> = {};
    const secrets: string[] = [];
    if (tap.secretName) {
      for (const [k, v] of Object.entries(await this.secretFields(environment, tap, tap.secretName))) {
        if (!ENV_NAME.test(k)) {
          throw new ValidationError(
            `secret '${tap.secretName}' has field '${k}', which cannot be an environment variable name`,
          ).coded(TapErrorCode.SecretInvalid);
        }
        env[k] = v;
        secrets.push(v);
      }
    }
    env.SERVICE_POSTGRES_DATABASE = this.config.database.name;
    env.SERVICE_MONGODB_DATABASE = this.config.auth.multiTenant ? environment : this.config.mongodb.database;
    const platform = platformEndpoint(this.config);
    env.SERVICE_PLATFORM_HOST = platform.host;
    env.SERVICE_PLATFORM_PORT = String(platform.port);
    if (testLimit > 0) env.SERVICE_TAP_TEST_LIMIT = String(testLimit);
    let runKey: string | null = null;
    if (this.config.auth.useApiKeys) {
      // Never the platform's own credentials: a key for this run only, read-only, within the grant.
      runKey = await this.runKeys.issue(
        { environment, label: `tap-run:${tap.name}`, capabilities: runKeyCapabilities(grant) },
        this.config.taps.timeoutMs + 60_000,
      );
      env.SERVICE_PLATFORM_API_KEY = runKey;
      secrets.push(runKey);
    }
    return { environment, env, secrets, runKey };
  }

  /** Ends the run key early; it expires by itself if this never happens. */
  async release(env: ScriptEnv): Promise<void> {
    if (env.runKey) await this.runKeys.revoke(env.runKey).catch(() => undefined);
  }

  /** A missing secret is the tap's mistake (400); an unreadable store is an outage and stays one. */
  private async secretFields(
    environment: string,
    tap: TapConfig,
    name: string,
  ): Promise<Record<string, string>> {
    assertTapSecret(name);
    try {
      return await this.secrets.reveal(environment, name);
    } catch (err) {
      if (err instanceof NotFoundError) {
        throw new ValidationError(`tap '${tap.name}' uses secret '${name}', which does not exist`).coded(
          TapErrorCode.SecretInvalid,
        );
      }
      throw err;
    }
  }
}
