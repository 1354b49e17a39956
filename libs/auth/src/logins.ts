import { Inject, Injectable } from '@nestjs/common';
import { createHmac } from 'node:crypto';
import { Logger } from 'pino';
import { CONFIG, LOGGER, NotFoundError, TapyardConfig, UnauthorizedError } from '@tapyard/core';
import { AuthErrorCode } from './auth-errors';
import { derivedKey } from './key-values';
import { LoginLimiter } from './login-limiter';
import { Session, SessionStore } from './sessions';
import { UserRow } from './users.repository';
import { UsersService } from './users.service';

export interface LoggedIn {
  user: UserRow;
  /** The session id, for the cookie. */
  id: string;
  session: Session;
}

/**
 * A login (USE_USER_AUTH=true): the limiter's wait, the password check, the failure or success
 * counted, a session. The API's controller only turns the outcome into cookies.
 */
@Injectable()
export class LoginService {
  private readonly usernameKey: Buffer;

  constructor(
    private readonly users: UsersService,
    private readonly sessions: SessionStore,
    private readonly limiter: LoginLimiter,
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.usernameKey = derivedKey(config.masterKey, 'tapyard failed-login username digest');
  }

  async login(environment: string, username: string, password: string, address: string): Promise<LoggedIn> {
    if (!this.config.auth.useUserAuth)
      throw new NotFoundError('user login is disabled (USE_USER_AUTH=false)');
    await this.limiter.check(environment, username, address);
    const user = await this.users.verify(environment, username, password);
    if (!user) {
      await this.limiter.failed(environment, username, address);
      this.logger.warn(
        { usernameHash: this.usernameHash(username), usernameLength: username.length, address },
        'login failed',
      );
      throw new UnauthorizedError('wrong username or password').coded(AuthErrorCode.LoginFailed);
    }
    await this.limiter.succeeded(environment, username, address);
    const { id, session } = await this.sessions.create(environment, user);
    this.logger.info({ key: `session:${user.username}`, address }, 'login');
    return { user, id, session };
  }

  /**
   * What a failed login's log line says of the username typed: never the text, since people type
   * their password there and log lines are kept and shipped. 12 hex digits of an HMAC under a key
   * derived from the master key tell an operator which attempts were on one name (one account
   * guessed at, or names sprayed); a plain SHA-256 would not do, as a password typed there would
   * fall to a dictionary run over the logs (the reason API-key digests are keyed too).
   */
  usernameHash(username: string): string {
    return createHmac('sha256', this.usernameKey).update(username, 'utf8').digest('hex').slice(0, 12);
  }
}
