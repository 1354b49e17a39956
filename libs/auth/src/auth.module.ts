import { Inject, Module, OnModuleInit } from '@nestjs/common';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { SecretsModule } from '@tapyard/secrets';
import { ApiKeysService } from './api-keys.service';
import { Authenticator } from './authenticator';
import { KeyUsage } from './key-usage';
import { KeyDigests } from './key-values';
import { LoginClock, LoginLimiter } from './login-limiter';
import { LoginService } from './logins';
import { RunKeysModule } from './run-keys';
import { SecretState } from './secret-state';
import { SessionStore } from './sessions';
import { TenantsService } from './tenants.service';
import { UsersRepository } from './users.repository';
import { UsersService } from './users.service';

/** Identities (API keys, login sessions), their capabilities, and tenants. Imported by the API only. */
@Module({
  imports: [SecretsModule, RunKeysModule],
  providers: [
    SecretState,
    KeyUsage,
    KeyDigests,
    ApiKeysService,
    TenantsService,
    UsersRepository,
    UsersService,
    SessionStore,
    LoginClock,
    LoginLimiter,
    LoginService,
    Authenticator,
  ],
  exports: [
    ApiKeysService,
    TenantsService,
    UsersService,
    SessionStore,
    LoginClock,
    LoginLimiter,
    LoginService,
    Authenticator,
  ],
})
export class AuthModule implements OnModuleInit {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly keys: ApiKeysService,
    private readonly users: UsersService,
  ) {}

  /** Bootstrap per the addendum: the `bootstrap` key and the first `admin` user. */
  async onModuleInit(): Promise<void> {
    await this.keys.ensureBootstrap(this.config.environment);
    if (this.config.auth.useUserAuth) await this.users.ensureAdmin(this.config.environment);
  }
}
