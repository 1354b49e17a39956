import Redis from 'ioredis';
import { removeEnvironmentKeys, sweepIdleEnvironmentKeys } from './support/redis-keys';
import { TEST_REDIS_URL, uniqueEnvironment } from './support/env';

/** The runs' Redis clean-up removes what its environments (and their tenants) made, and nothing else. */
describe('test runs clean up their Redis keys', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
  });
  afterAll(() => redis.disconnect());

  const made = async (environment: string) => (await redis.keys(`tapyard:${environment}:*`)).sort();

  it("removes an environment's keys and its tenants', and leaves another environment's and keys outside any", async () => {
    const mine = uniqueEnvironment('keys');
    const tenant = `ct${mine.slice(-8)}`;
    const other = uniqueEnvironment('keys-other');
    const otherTenant = `ct${other.slice(-8)}`;
    for (const e of [mine, tenant, other, otherTenant]) {
      await redis.set(`tapyard:${e}:ingest:meta`, '1');
      await redis.hset(`tapyard:${e}:ingest:1`, 'data', '{}');
    }
    await redis.set(`tapyard:run-key:${mine}`, '1');
    expect(await removeEnvironmentKeys(TEST_REDIS_URL, [mine])).toBe(4);
    expect(await made(mine)).toEqual([]);
    expect(await made(tenant)).toEqual([]);
    expect(await made(other)).toHaveLength(2);
    expect(await made(otherTenant)).toHaveLength(2);
    expect(await redis.get(`tapyard:run-key:${mine}`)).toBe('1');
    await redis.del(`tapyard:run-key:${mine}`);
  });

  it('sweeps only the environments it matches whose keys were all left idle that long', async () => {
    const idle = uniqueEnvironment('keys-idle');
    const busy = uniqueEnvironment('keys-busy');
    for (const e of [idle, busy]) {
      await redis.set(`tapyard:${e}:ingest:meta`, '1');
      await redis.set(`tapyard:${e}:ingest:id`, '1');
    }
    const ours = (e: string) => e === idle || e === busy;
    // Just written: not idle for an hour, so kept.
    expect(await sweepIdleEnvironmentKeys(TEST_REDIS_URL, { idleSeconds: 3600, matches: ours })).toBe(0);
    expect(await made(idle)).toHaveLength(2);
    // Any idle time counts; only the environment matched goes.
    expect(
      await sweepIdleEnvironmentKeys(TEST_REDIS_URL, { idleSeconds: 0, matches: (e) => e === idle }),
    ).toBe(2);
    expect(await made(idle)).toEqual([]);
    expect(await made(busy)).toHaveLength(2);
  });
});
