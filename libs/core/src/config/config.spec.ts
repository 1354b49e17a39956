import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, parseMasterKey } from './config';

const KEY = 'ab'.repeat(32);

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig({ TAPYARD_MASTER_KEY: KEY, ...env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const c = loadConfig({ TAPYARD_MASTER_KEY: KEY });
    expect(c.port).toBe(8080);
    expect(c.environment).toBe('dev');
    expect(c.database.url).toBe('postgres://postgres@127.0.0.1:5432/tapyard');
    expect(c.database.name).toBe('tapyard');
    expect(c.redis.url).toBe('redis://127.0.0.1:6379');
    expect(c.mongodb).toEqual({ uri: null, database: 'dev' });
    expect(c.objectStore.endpoint).toBeNull();
    expect(c.auth).toMatchObject({
      useUserAuth: false,
      useApiKeys: false,
      multiTenant: false,
      capabilityEnforcement: 'enforce',
    });
    expect(c.bodyLimitBytes).toBe(1024 * 1024);
    expect(c.healthTimeoutMs).toBe(2000);
    expect(c.masterKey.toString('hex')).toBe(KEY);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads every variable it documents', () => {
    const c = loadConfig({
      TAPYARD_MASTER_KEY: KEY,
      PORT: '9000',
      TAPYARD_ENV: 'staging-2',
      DATABASE_URL: 'postgresql://u:p@db:5433/meta',
      USE_USER_AUTH: 'true',
      USE_API_KEYS: '1',
      MULTI_TENANT: 'yes',
      CAPABILITY_ENFORCEMENT: 'log-only',
      BODY_LIMIT: '2mb',
      KAFKA_BROKERS: '127.0.0.1:9092, broker2:9093',
      MONGODB_URI: 'mongodb://127.0.0.1:27017',
    });
    expect(c.port).toBe(9000);
    expect(c.environment).toBe('staging-2');
    expect(c.database.name).toBe('meta');
    expect(c.auth).toMatchObject({
      useUserAuth: true,
      useApiKeys: true,
      multiTenant: true,
      capabilityEnforcement: 'log-only',
    });
    expect(c.bodyLimitBytes).toBe(2 * 1024 * 1024);
    expect(c.kafka.brokers).toEqual(['127.0.0.1:9092', 'broker2:9093']);
    expect(c.mongodb.database).toBe('staging-2');
  });

  it('names every bad variable at once', () => {
    const p = problems({
      PORT: 'abc',
      USE_API_KEYS: 'maybe',
      CAPABILITY_ENFORCEMENT: 'off',
      TAPYARD_ENV: 'Bad Env',
    });
    expect(p).toHaveLength(4);
    expect(p[0]).toMatch(/^TAPYARD_ENV /);
    expect(p.some((m) => m.startsWith('PORT must be an integer between 1 and 65535 (got "abc")'))).toBe(true);
    expect(p.some((m) => m.startsWith('USE_API_KEYS must be true or false'))).toBe(true);
    expect(p.some((m) => m.startsWith('CAPABILITY_ENFORCEMENT must be one of enforce, log-only'))).toBe(true);
  });

  it('rejects bad URLs without echoing them (they carry credentials)', () => {
    const p = problems({ DATABASE_URL: 'mysql://root:hunter2@db/x', REDIS_URL: 'not a url' });
    expect(p).toEqual([
      'DATABASE_URL must be a URL with scheme postgres or postgresql',
      'REDIS_URL must be a URL with scheme redis or rediss',
    ]);
  });

  it('reads the login back-off: per account and address, doubling, capped; per address', () => {
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY }).auth).toMatchObject({
      loginWindowSeconds: 900,
      loginBackoffAfter: 3,
      loginBackoffSeconds: 1,
      loginBackoffMaxSeconds: 900,
      loginMaxFailuresPerAddress: 20,
    });
    const c = loadConfig({
      TAPYARD_MASTER_KEY: KEY,
      LOGIN_BACKOFF_AFTER: '5',
      LOGIN_BACKOFF_SECONDS: '2',
      LOGIN_BACKOFF_MAX_SECONDS: '60',
    });
    expect(c.auth).toMatchObject({
      loginBackoffAfter: 5,
      loginBackoffSeconds: 2,
      loginBackoffMaxSeconds: 60,
    });
    expect(problems({ LOGIN_BACKOFF_AFTER: '0', LOGIN_BACKOFF_SECONDS: 'x' })).toEqual([
      expect.stringMatching(/^LOGIN_BACKOFF_AFTER must be an integer/),
      expect.stringMatching(/^LOGIN_BACKOFF_SECONDS must be an integer/),
    ]);
  });

  it('refuses auth settings that cannot work, without echoing secret values', () => {
    expect(problems({ MULTI_TENANT: 'true' })).toEqual([
      'MULTI_TENANT=true needs USE_API_KEYS=true: the tenant of a request is found from its API key',
    ]);
    const p = problems({ TAPYARD_BOOTSTRAP_API_KEY: 'short-key', TAPYARD_ADMIN_PASSWORD: 'pw-short' });
    expect(p).toHaveLength(2);
    expect(p.join(' ')).not.toMatch(/short-key|pw-short/);
  });

  it('rejects out-of-range ports, sizes and broker lists', () => {
    expect(problems({ PORT: '70000' })[0]).toMatch(/^PORT/);
    expect(problems({ BODY_LIMIT: 'lots' })[0]).toMatch(/^BODY_LIMIT must be a size/);
    expect(problems({ KAFKA_BROKERS: 'nohostport' })[0]).toMatch(/^KAFKA_BROKERS/);
  });

  it('bounds sinks: timeouts with defaults, and fewer sink slots than worker slots', () => {
    const c = loadConfig({ TAPYARD_MASTER_KEY: KEY });
    expect(c.sinks).toEqual({ requestTimeoutMs: 30_000, loadTimeoutMs: 3_600_000, concurrency: 3 });
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY, WORKER_CONCURRENCY: '1' }).sinks.concurrency).toBe(1);
    expect(
      loadConfig({
        TAPYARD_MASTER_KEY: KEY,
        SINK_REQUEST_TIMEOUT_MS: '500',
        SINK_LOAD_TIMEOUT_MS: '2000',
        SINK_CONCURRENCY: '4',
      }).sinks,
    ).toEqual({ requestTimeoutMs: 500, loadTimeoutMs: 2000, concurrency: 4 });
    expect(problems({ SINK_REQUEST_TIMEOUT_MS: '0' })[0]).toMatch(
      /^SINK_REQUEST_TIMEOUT_MS must be an integer/,
    );
    expect(problems({ SINK_LOAD_TIMEOUT_MS: 'soon' })[0]).toMatch(/^SINK_LOAD_TIMEOUT_MS must be an integer/);
    expect(problems({ WORKER_CONCURRENCY: '2', SINK_CONCURRENCY: '3' })).toEqual([
      'SINK_CONCURRENCY (3) must not exceed WORKER_CONCURRENCY (2): it bounds the worker slots sinks may hold',
    ]);
  });

  it('needs a master key: inline, from a file, and a clear error without either', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tapyard-key-'));
    const file = join(dir, 'master.key');
    writeFileSync(file, `${KEY}\n`);
    expect(loadConfig({ TAPYARD_MASTER_KEY_FILE: file }).masterKey.toString('hex')).toBe(KEY);
    expect(loadConfig({ TAPYARD_DATA_DIR: dir }).masterKey.toString('hex')).toBe(KEY);

    const missing = problems({ TAPYARD_MASTER_KEY: '', TAPYARD_MASTER_KEY_FILE: join(dir, 'absent.key') });
    expect(missing[0]).toMatch(
      /^TAPYARD_MASTER_KEY is not set and TAPYARD_MASTER_KEY_FILE .* does not exist/,
    );
    expect(problems({ TAPYARD_MASTER_KEY: 'short' })[0]).toMatch(/^TAPYARD_MASTER_KEY must be 32 bytes/);
  });

  it('parses hex and base64 master keys of exactly 32 bytes', () => {
    expect(parseMasterKey(KEY)?.length).toBe(32);
    expect(parseMasterKey(Buffer.alloc(32, 7).toString('base64'))?.length).toBe(32);
    expect(parseMasterKey('ab'.repeat(31))).toBeNull();
    expect(parseMasterKey(Buffer.alloc(16).toString('base64'))).toBeNull();
  });
});
