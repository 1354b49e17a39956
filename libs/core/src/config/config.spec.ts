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
  it('reads TAP_EGRESS_ALLOW entries scoped to an environment, and refuses malformed ones naming the variable', () => {
    const c = loadConfig({ TAPYARD_MASTER_KEY: KEY, TAP_EGRESS_ALLOW: 'acme=10.0.0.5:5432,127.0.0.1:8090' });
    expect(c.egressAllow).toEqual([
      { host: '10.0.0.5', port: 5432, environment: 'acme' },
      { host: '127.0.0.1', port: 8090 },
    ]);
    expect(problems({ TAP_EGRESS_ALLOW: 'ACME=10.0.0.5:5432' })).toEqual([
      expect.stringMatching(
        /^TAP_EGRESS_ALLOW must be .*'ACME=10\.0\.0\.5:5432' does not start with an environment name/,
      ),
    ]);
    expect(problems({ TAP_EGRESS_ALLOW: 'acme=' })).toEqual([
      expect.stringMatching(/^TAP_EGRESS_ALLOW .*'acme='/),
    ]);
    expect(problems({ REST_SINK_ALLOW: 'acme=10.0.0.0/33' })).toEqual([
      expect.stringMatching(/^REST_SINK_ALLOW .*'acme=10\.0\.0\.0\/33' is not a CIDR range/),
    ]);
  });

  it('applies the documented defaults', () => {
    const c = loadConfig({ TAPYARD_MASTER_KEY: KEY });
    expect(c.port).toBe(8080);
    expect(c.environment).toBe('dev');
    expect(c.database.url).toBe('postgres://postgres@127.0.0.1:5432/tapyard');
    expect(c.database.name).toBe('tapyard');
    expect(c.redis.url).toBe('redis://127.0.0.1:6379');
    expect(c.mongodb).toEqual({ uri: null, database: 'dev', timeoutMs: 5000 });
    expect(c.objectStore.endpoint).toBeNull();
    expect(c.auth).toMatchObject({
      useUserAuth: false,
      useApiKeys: false,
      multiTenant: false,
      capabilityEnforcement: 'enforce',
      apiDocs: 'public',
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
      apiDocs: 'authenticated',
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

  it("reads the sandbox's per-run uid range and refuses one that reaches root or is reversed", () => {
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY }).taps.sandboxUids).toEqual({
      first: 1_000_000_000,
      last: 1_000_065_535,
    });
    const c = loadConfig({ TAPYARD_MASTER_KEY: KEY, TAP_SANDBOX_UIDS: '200000 - 200099' });
    expect(c.taps.sandboxUids).toEqual({ first: 200_000, last: 200_099 });
    for (const bad of ['0-10', '20-10', '100000', '1-2147483648']) {
      expect(problems({ TAP_SANDBOX_UIDS: bad })).toEqual([
        `TAP_SANDBOX_UIDS must be a range first-last between 1 and 2147483647 (got "${bad}")`,
      ]);
    }
  });

  it('rejects bad URLs without echoing them (they carry credentials)', () => {
    const p = problems({ DATABASE_URL: 'mysql://root:hunter2@db/x', REDIS_URL: 'not a url' });
    expect(p).toEqual([
      'DATABASE_URL must be a URL with scheme postgres or postgresql',
      'REDIS_URL must be a URL with scheme redis or rediss',
    ]);
  });

  it('reads the login back-off: per account and address, per account (short), doubling, capped; per address', () => {
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY }).auth).toMatchObject({
      loginWindowSeconds: 900,
      loginBackoffAfter: 3,
      loginBackoffSeconds: 1,
      loginBackoffMaxSeconds: 900,
      loginAccountBackoffAfter: 5,
      loginAccountBackoffMaxSeconds: 5,
      loginMaxFailuresPerAddress: 20,
    });
    const c = loadConfig({
      TAPYARD_MASTER_KEY: KEY,
      LOGIN_BACKOFF_AFTER: '5',
      LOGIN_BACKOFF_SECONDS: '2',
      LOGIN_BACKOFF_MAX_SECONDS: '60',
      LOGIN_ACCOUNT_BACKOFF_AFTER: '8',
      LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS: '10',
    });
    expect(c.auth).toMatchObject({
      loginBackoffAfter: 5,
      loginBackoffSeconds: 2,
      loginBackoffMaxSeconds: 60,
      loginAccountBackoffAfter: 8,
      loginAccountBackoffMaxSeconds: 10,
    });
    // The owner waits the account's back-off too: it may not grow into a lockout.
    expect(problems({ LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS: '900' })).toEqual([
      expect.stringMatching(/^LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS must be an integer/),
    ]);
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

  it('reads API_DOCS: public by default only when no authentication is on', () => {
    const docs = (env: Record<string, string>): string =>
      loadConfig({ TAPYARD_MASTER_KEY: KEY, ...env }).auth.apiDocs;
    expect(docs({})).toBe('public');
    expect(docs({ USE_API_KEYS: 'true' })).toBe('authenticated');
    expect(docs({ USE_USER_AUTH: 'true' })).toBe('authenticated');
    expect(docs({ USE_API_KEYS: 'true', API_DOCS: 'public' })).toBe('public');
    expect(docs({ API_DOCS: 'off' })).toBe('off');
    expect(problems({ API_DOCS: 'private' })).toEqual([
      'API_DOCS must be one of public, authenticated, off (got "private")',
    ]);
  });

  it('rejects out-of-range ports, sizes and broker lists', () => {
    expect(problems({ PORT: '70000' })[0]).toMatch(/^PORT/);
    expect(problems({ BODY_LIMIT: 'lots' })[0]).toMatch(/^BODY_LIMIT must be a size/);
    expect(problems({ KAFKA_BROKERS: 'nohostport' })[0]).toMatch(/^KAFKA_BROKERS/);
  });

  it('reads the shutdown grace and the worker operations port, and refuses the old SHUTDOWN_TIMEOUT_MS', () => {
    const defaults = loadConfig({ TAPYARD_MASTER_KEY: KEY });
    expect(defaults.shutdownGraceMs).toBe(30_000);
    expect(defaults.worker).toMatchObject({ httpPort: 8081, httpHost: '127.0.0.1' });
    const set = loadConfig({
      TAPYARD_MASTER_KEY: KEY,
      SHUTDOWN_GRACE_SECONDS: '5',
      WORKER_HTTP_PORT: '0',
      WORKER_HTTP_HOST: '0.0.0.0',
    });
    expect(set.shutdownGraceMs).toBe(5000);
    expect(set.worker).toMatchObject({ httpPort: 0, httpHost: '0.0.0.0' });
    expect(problems({ WORKER_HTTP_PORT: '65536' })[0]).toMatch(/^WORKER_HTTP_PORT/);
    expect(problems({ SHUTDOWN_GRACE_SECONDS: '-1' })[0]).toMatch(/^SHUTDOWN_GRACE_SECONDS/);
    // A deployment still setting the old name must not silently get the default grace.
    expect(problems({ SHUTDOWN_TIMEOUT_MS: '60000' })).toEqual([
      'SHUTDOWN_TIMEOUT_MS was replaced by SHUTDOWN_GRACE_SECONDS (seconds, default 30)',
    ]);
  });

  it('reads the MongoDB driver timeout, bounded', () => {
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY, MONGODB_TIMEOUT_MS: '1000' }).mongodb.timeoutMs).toBe(1000);
    expect(problems({ MONGODB_TIMEOUT_MS: '10' })[0]).toMatch(/^MONGODB_TIMEOUT_MS/);
  });

  it("reads the tap run debounce: the spec's 5 s by default, 0 turning it off, negatives refused", () => {
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY }).taps.debounceMs).toBe(5000);
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY, TAP_DEBOUNCE_MS: '0' }).taps.debounceMs).toBe(0);
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY, TAP_DEBOUNCE_MS: '250' }).taps.debounceMs).toBe(250);
    expect(problems({ TAP_DEBOUNCE_MS: '-1' })[0]).toMatch(/^TAP_DEBOUNCE_MS/);
  });

  it('bounds natural-language queries: pool, work_mem and result bytes, defaults and ranges', () => {
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY }).query).toEqual({
      role: 'tapyard_query',
      timeoutMs: 10000,
      poolSize: 2,
      workMemKb: 16384,
      maxResultBytes: 8 * 1024 * 1024,
    });
    expect(
      loadConfig({ TAPYARD_MASTER_KEY: KEY, QUERY_WORK_MEM: '4mb', QUERY_MAX_RESULT_BYTES: '64kb' }).query,
    ).toMatchObject({ workMemKb: 4096, maxResultBytes: 65536 });
    expect(problems({ QUERY_POOL_SIZE: '0' })[0]).toMatch(
      /^QUERY_POOL_SIZE must be an integer between 1 and 50/,
    );
    expect(problems({ QUERY_WORK_MEM: '1kb' })[0]).toMatch(/^QUERY_WORK_MEM must be a size/);
    expect(problems({ QUERY_MAX_RESULT_BYTES: '2gb' })[0]).toMatch(/^QUERY_MAX_RESULT_BYTES must be a size/);
  });

  it('bounds document decompression: defaults, values read, and out-of-range values refused', () => {
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY }).documents).toEqual({
      maxDecompressedBytes: 256 * 1024 * 1024,
      maxCompressionRatio: 200,
      parseMemoryBytes: 1024 * 1024 * 1024,
    });
    expect(
      loadConfig({
        TAPYARD_MASTER_KEY: KEY,
        DOCUMENT_MAX_DECOMPRESSED_BYTES: '64mb',
        DOCUMENT_MAX_COMPRESSION_RATIO: '50',
        DOCUMENT_PARSE_MEMORY_LIMIT: '2gb',
      }).documents,
    ).toEqual({
      maxDecompressedBytes: 64 * 1024 * 1024,
      maxCompressionRatio: 50,
      parseMemoryBytes: 2 * 1024 ** 3,
    });
    const p = problems({
      DOCUMENT_MAX_DECOMPRESSED_BYTES: '3gb',
      DOCUMENT_MAX_COMPRESSION_RATIO: '0',
      DOCUMENT_PARSE_MEMORY_LIMIT: '100mb',
    });
    expect(p).toEqual([
      'DOCUMENT_MAX_DECOMPRESSED_BYTES must be a size between 1mb and 2gb (got "3gb")',
      'DOCUMENT_MAX_COMPRESSION_RATIO must be an integer between 10 and 10000 (got "0")',
      'DOCUMENT_PARSE_MEMORY_LIMIT must be a size between 256mb and 16gb (got "100mb")',
    ]);
  });

  it('gives small uploads more worker slots than large jobs: 16 and 4 by default, large never more', () => {
    const c = loadConfig({ TAPYARD_MASTER_KEY: KEY });
    expect([c.worker.concurrency, c.worker.largeJobs]).toEqual([16, 4]);
    const two = loadConfig({ TAPYARD_MASTER_KEY: KEY, WORKER_CONCURRENCY: '2' });
    expect([two.worker.concurrency, two.worker.largeJobs]).toEqual([2, 2]);
    expect(
      loadConfig({ TAPYARD_MASTER_KEY: KEY, WORKER_CONCURRENCY: '8', LARGE_JOB_CONCURRENCY: '8' }).worker
        .largeJobs,
    ).toBe(8);
    expect(problems({ WORKER_CONCURRENCY: '4', LARGE_JOB_CONCURRENCY: '5' })).toEqual([
      'LARGE_JOB_CONCURRENCY (5) must not exceed WORKER_CONCURRENCY (4): it bounds the worker slots large jobs may hold',
    ]);
  });

  it('bounds sinks: timeouts with defaults, and fewer sink slots than worker slots', () => {
    const c = loadConfig({ TAPYARD_MASTER_KEY: KEY });
    expect(c.sinks).toEqual({ requestTimeoutMs: 30_000, loadTimeoutMs: 3_600_000, concurrency: 3 });
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY, WORKER_CONCURRENCY: '1' }).sinks.concurrency).toBe(1);
    expect(loadConfig({ TAPYARD_MASTER_KEY: KEY, WORKER_CONCURRENCY: '3' }).sinks.concurrency).toBe(2);
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
