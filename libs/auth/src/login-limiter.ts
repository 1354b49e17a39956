import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, RateLimitedError, TapyardConfig } from '@tapyard/core';
import { AuthRedis } from './auth.redis';
import { AuthErrorCode } from './auth-errors';

/** 2^30 seconds is far past any cap; the exponent stops here so the arithmetic stays exact. */
const MAX_DOUBLINGS = 30;

/** The limiter's time: a provider of its own, so tests move it instead of sleeping. */
@Injectable()
export class LoginClock {
  now(): number {
    return Date.now();
  }
}

/**
 * Slows password guessing without letting anyone lock the owner out for long. Failed logins are
 * counted in Redis (shared by all instances) per account and client address, per account across
 * addresses, and per address:
 * - after LOGIN_BACKOFF_AFTER failures of one account from one address, that pair waits
 *   LOGIN_BACKOFF_SECONDS, doubling with each further failure up to LOGIN_BACKOFF_MAX_SECONDS;
 * - after LOGIN_ACCOUNT_BACKOFF_AFTER failures of one account from any addresses, the account waits
 *   LOGIN_BACKOFF_SECONDS, doubling up to LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS: short, since the owner
 *   waits it too, but it holds however many addresses a guesser has (or forges);
 * - after LOGIN_MAX_FAILURES_PER_ADDRESS failures from one address (any accounts), that address
 *   waits LOGIN_WINDOW_SECONDS.
 * A waiting pair, account or address gets 429 with Retry-After, even for the right password (no
 * oracle); refused attempts count nothing. A success clears the pair and the account; the address
 * keeps its count (its failures on other accounts stand). Counts are forgotten LOGIN_WINDOW_SECONDS
 * after the last failure (plus the wait).
 */
@Injectable()
export class LoginLimiter {
  constructor(
    private readonly redis: AuthRedis,
    private readonly clock: LoginClock,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  async check(environment: string, username: string, address: string): Promise<void> {
    const keys = new Keys(environment, username, address);
    const untils = (await this.redis.run((r) =>
      r.multi().hget(keys.pair, 'until').hget(keys.account, 'until').hget(keys.address, 'until').exec(),
    )) as [unknown, string | null][];
    const blockedMs = Math.max(0, ...untils.map(([, until]) => Number(until ?? 0))) - this.clock.now();
    if (blockedMs > 0) {
      const seconds = Math.max(1, Math.ceil(blockedMs / 1000));
      throw new RateLimitedError(`too many failed logins: try again in ${seconds} s`, seconds).coded(
        AuthErrorCode.LoginRateLimited,
      );
    }
  }

  async failed(environment: string, username: string, address: string): Promise<void> {
    const a = this.config.auth;
    const keys = new Keys(environment, username, address);
    await this.redis.run(async (r) => {
      const counts = (await r
        .multi()
        .hincrby(keys.pair, 'failures', 1)
        .hincrby(keys.account, 'failures', 1)
        .hincrby(keys.address, 'failures', 1)
        .exec()) as [unknown, number][];
      const [pair, account, perAddress] = counts.map(([, n]) => n);
      const waits: [string, number][] = [
        [keys.pair, backoff(pair, a.loginBackoffAfter, a.loginBackoffSeconds, a.loginBackoffMaxSeconds)],
        [
          keys.account,
          backoff(
            account,
            a.loginAccountBackoffAfter,
            a.loginBackoffSeconds,
            a.loginAccountBackoffMaxSeconds,
          ),
        ],
        [keys.address, perAddress >= a.loginMaxFailuresPerAddress ? a.loginWindowSeconds : 0],
      ];
      const now = this.clock.now();
      const m = r.multi();
      for (const [key, waitSeconds] of waits) {
        if (waitSeconds > 0) m.hset(key, 'until', now + waitSeconds * 1000);
        m.expire(key, a.loginWindowSeconds + waitSeconds);
      }
      await m.exec();
    });
  }

  async succeeded(environment: string, username: string, address: string): Promise<void> {
    const keys = new Keys(environment, username, address);
    await this.redis.run((r) => r.del(keys.pair, keys.account));
  }
}

/** The wait after the `count`th failure: none before `after`, then `base` doubling up to `max`. */
function backoff(count: number, after: number, base: number, max: number): number {
  return count >= after ? Math.min(max, base * 2 ** Math.min(count - after, MAX_DOUBLINGS)) : 0;
}

class Keys {
  readonly pair: string;
  readonly account: string;
  readonly address: string;

  constructor(environment: string, username: string, address: string) {
    // base64url holds no '@', so no username and address can pass for another pair.
    const account = Buffer.from(username.slice(0, 128), 'utf8').toString('base64url');
    const prefix = `tapyard:${environment}:login-limit`;
    this.pair = `${prefix}:pair:${account}@${address}`;
    this.account = `${prefix}:account:${account}`;
    this.address = `${prefix}:address:${address}`;
  }
}
