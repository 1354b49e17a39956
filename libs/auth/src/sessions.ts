import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { AuthRedis } from './auth.redis';
import { randomToken, tokenDigest } from './key-values';

export interface Session {
  username: string;
  /** The user's session epoch at login; the session ends when the user's epoch moves on. */
  epoch: string;
  /** Must come back in `x-csrf-token` on cookie-authenticated writes. */
  csrf: string;
  createdAt: string;
}

export const SESSION_COOKIE = 'tapyard_session';
export const CSRF_COOKIE = 'tapyard_csrf';
export const CSRF_HEADER = 'x-csrf-token';

/**
 * Server-side login sessions in Redis, so any API instance accepts them and logout ends them
 * everywhere. Redis holds only a digest of the session id: a Redis dump does not yield live cookies.
 */
@Injectable()
export class SessionStore {
  constructor(
    private readonly redis: AuthRedis,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  async create(
    environment: string,
    user: { username: string; sessionEpoch: string },
  ): Promise<{ id: string; session: Session }> {
    const id = randomToken();
    const session: Session = {
      username: user.username,
      epoch: user.sessionEpoch,
      csrf: randomToken(),
      createdAt: new Date().toISOString(),
    };
    await this.redis.run((r) =>
      r.set(key(environment, id), JSON.stringify(session), 'EX', this.config.auth.sessionTtlSeconds),
    );
    return { id, session };
  }

  async get(environment: string, id: string): Promise<Session | null> {
    const raw = await this.redis.run((r) => r.get(key(environment, id)));
    return raw ? (JSON.parse(raw) as Session) : null;
  }

  async destroy(environment: string, id: string): Promise<void> {
    await this.redis.run((r) => r.del(key(environment, id)));
  }
}

function key(environment: string, id: string): string {
  return `tapyard:${environment}:session:${tokenDigest(id)}`;
}
