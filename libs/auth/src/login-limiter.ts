import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, RateLimitedError, TapyardConfig } from '@tapyard/core';
import { AuthRedis } from './auth.redis';

/**
 * Failed logins counted per username and per client address in fixed windows (Redis, shared by all
 * instances). Over either limit, login answers 429 with Retry-After, even for the right password.
 */
@Injectable()
export class LoginLimiter {
  constructor(
    private readonly redis: AuthRedis,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  async check(environment: string, username: string, address: string): Promise<void> {
    const { loginMaxFailuresPerUser: perUser, loginMaxFailuresPerAddress: perAddress } = this.config.auth;
    const [user, addr] = [userKey(environment, username), addressKey(environment, address)];
    const [[, u], [, ut], [, a], [, at]] = (await this.redis.run((r) =>
      r.multi().get(user).pttl(user).get(addr).pttl(addr).exec(),
    )) as [unknown, string | number | null][];
    const blocked = Number(u ?? 0) >= perUser ? Number(ut) : Number(a ?? 0) >= perAddress ? Number(at) : null;
    if (blocked !== null) {
      const seconds = Math.max(1, Math.ceil(blocked / 1000));
      throw new RateLimitedError(`too many failed logins: try again in ${seconds} s`, seconds);
    }
  }

  async failed(environment: string, username: string, address: string): Promise<void> {
    const window = this.config.auth.loginWindowSeconds;
    await this.redis.run(async (r) => {
      const m = r.multi();
      for (const k of [userKey(environment, username), addressKey(environment, address)]) {
        m.set(k, '0', 'EX', window, 'NX').incr(k);
      }
      await m.exec();
    });
  }

  async succeeded(environment: string, username: string): Promise<void> {
    await this.redis.run((r) => r.del(userKey(environment, username)));
  }
}

function userKey(environment: string, username: string): string {
  return `tapyard:${environment}:login-failures:user:${username.slice(0, 128)}`;
}

function addressKey(environment: string, address: string): string {
  return `tapyard:${environment}:login-failures:address:${address}`;
}
