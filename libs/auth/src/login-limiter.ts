import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, RateLimitedError, TapyardConfig } from '@tapyard/core';
import { AuthRedis } from './auth.redis';

/** 2^30 seconds is far past any cap; the exponent stops here so the arithmetic stays exact. */
const MAX_DOUBLINGS = 30;

/**
 * Slows password guessing without letting anyone lock anyone out. Failed logins are counted in Redis
 * (shared by all instances) per account *and* client address, and per address:
 * - after LOGIN_BACKOFF_AFTER failures of one account from one address, that pair waits
 *   LOGIN_BACKOFF_SECONDS, doubling with each further failure up to LOGIN_BACKOFF_MAX_SECONDS;
 * - after LOGIN_MAX_FAILURES_PER_ADDRESS failures from one address (any accounts), that address
 *   waits until LOGIN_WINDOW_SECONDS have passed since its last failure.
 * A waiting pair or address gets 429 with Retry-After, even for the right password (no oracle). The
 * account itself is never locked: its owner, from another address, logs in as usual. A success
 * clears the pair's count. Counts are forgotten LOGIN_WINDOW_SECONDS after the last failure.
 */
@Injectable()
export class LoginLimiter {
  constructor(
    private readonly redis: AuthRedis,
    @Inject(CONFIG) private readonly config: TapyardConfig,
  ) {}

  async check(environment: string, username: string, address: string): Promise<void> {
    const perAddress = this.config.auth.loginMaxFailuresPerAddress;
    const keys = new Keys(environment, username, address);
    const [[, wait], [, failures], [, failuresTtl]] = (await this.redis.run((r) =>
      r.multi().pttl(keys.pairWait).get(keys.address).pttl(keys.address).exec(),
    )) as [unknown, string | number | null][];
    const pairWait = Number(wait);
    const blockedMs =
      pairWait > 0 ? pairWait : Number(failures ?? 0) >= perAddress ? Math.max(1, Number(failuresTtl)) : 0;
    if (blockedMs > 0) {
      const seconds = Math.max(1, Math.ceil(blockedMs / 1000));
      throw new RateLimitedError(`too many failed logins: try again in ${seconds} s`, seconds);
    }
  }

  async failed(environment: string, username: string, address: string): Promise<void> {
    const { loginWindowSeconds: window, loginBackoffAfter: after } = this.config.auth;
    const { loginBackoffSeconds: base, loginBackoffMaxSeconds: max } = this.config.auth;
    const keys = new Keys(environment, username, address);
    await this.redis.run(async (r) => {
      const [[, count]] = (await r
        .multi()
        .incr(keys.pair)
        .incr(keys.address)
        .expire(keys.address, window)
        .exec()) as [unknown, number][];
      const waitSeconds =
        count >= after ? Math.min(max, base * 2 ** Math.min(count - after, MAX_DOUBLINGS)) : 0;
      const m = r.multi().expire(keys.pair, window + waitSeconds);
      if (waitSeconds > 0) m.set(keys.pairWait, '1', 'PX', waitSeconds * 1000);
      await m.exec();
    });
  }

  /** The pair starts afresh; the address keeps its count (its failures on other accounts stand). */
  async succeeded(environment: string, username: string, address: string): Promise<void> {
    const keys = new Keys(environment, username, address);
    await this.redis.run((r) => r.del(keys.pair, keys.pairWait));
  }
}

class Keys {
  readonly pair: string;
  readonly pairWait: string;
  readonly address: string;

  constructor(environment: string, username: string, address: string) {
    // base64url holds no '@', so no username and address can pass for another pair.
    const pair = `${Buffer.from(username.slice(0, 128), 'utf8').toString('base64url')}@${address}`;
    this.pair = `tapyard:${environment}:login-failures:pair:${pair}`;
    this.pairWait = `tapyard:${environment}:login-wait:pair:${pair}`;
    this.address = `tapyard:${environment}:login-failures:address:${address}`;
  }
}
