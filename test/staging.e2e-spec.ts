import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createLogger, loadConfig } from '@tapyard/core';
import { STAGING_PREFIX, Staging, streamStatePath } from '@tapyard/ingestion';
import { ObjectStore } from '@tapyard/objectstore';
import { RecordsLoad } from '../libs/taps/src/records-load';
import { closedPort, cuttableProxy } from './support/net';
import { testEnv, uniqueEnvironment } from './support/env';

/**
 * The object-store staging every job input travels through between hosts (real MinIO): a reader
 * copies parts while they are written, and ends as the writer ended.
 */
describe('staging (inputs between hosts, through the object store)', () => {
  const env = uniqueEnvironment('staging');
  const config = loadConfig(testEnv({ TAPYARD_ENV: env, STAGING_READ_RETRY_SECONDS: '1' }));
  const logger = createLogger('warn', 'staging-test');
  const store = new ObjectStore(config, logger);
  const staging = new Staging(config, logger, store);
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tapyard-staging-test-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  const state = (local: string) => readFile(streamStatePath(local), 'utf8').catch(() => null);
  async function until(check: () => Promise<boolean>, what: string): Promise<void> {
    const end = Date.now() + 20_000;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const objects = async (id: string) =>
    (await store.list(await store.bucket(env, 'staged'), `${STAGING_PREFIX}${id}/`)).map((o) => o.key);

  it('a reader copies what is written while it is written, and the whole of it once done', async () => {
    const body = randomBytes(10 * 1024 * 1024 + 12_345);
    const w = await staging.writer(env, 'growing');
    const local = join(dir, 'growing');
    const { finished } = await staging.mirror(env, 'growing', local, { reader: 'job-a' });
    // The first 5 MiB: more than a part, so the reader has bytes before the writer ends.
    w.write(body.subarray(0, 5 * 1024 * 1024));
    await until(async () => (await stat(local)).size >= 4 * 1024 * 1024, 'the first part to arrive');
    expect(await state(local)).toBeNull();
    w.end(body.subarray(5 * 1024 * 1024));
    await new Promise((r) => w.once('finish', r));
    await staging.done(env, w);
    await finished;
    expect(await state(local)).toBe('done');
    expect(sha(await readFile(local))).toBe(sha(body));
    expect(w.parts).toBeGreaterThanOrEqual(2);
    await staging.remove(env, 'growing');
    expect(await objects('growing')).toEqual([]);
  });

  it("a slow writer's few bytes still reach the reader before the writer ends", async () => {
    const w = await staging.writer(env, 'trickle');
    const local = join(dir, 'trickle');
    const copying = new AbortController();
    const { finished } = await staging.mirror(env, 'trickle', local, { signal: copying.signal });
    w.write(Buffer.from('id,name\n1,a\n'));
    await until(async () => (await stat(local)).size === 12, 'the 12 bytes to be copied');
    copying.abort();
    await finished;
    expect(await state(local)).toBeNull();
    await w.discard();
    await staging.remove(env, 'trickle');
  });

  it("an aborted input ends its reader with the writer's reason; one reader can be told to stop while another reads on", async () => {
    const w = await staging.writer(env, 'shared');
    w.write(Buffer.from('{"a":1}\n'));
    const first = join(dir, 'first');
    const second = join(dir, 'second');
    const a = await staging.mirror(env, 'shared', first, { reader: 'job-first' });
    await staging.supersede(env, 'shared', 'job-first', 'record 2 brought new key(s)');
    await a.finished;
    expect(await state(first)).toBe('superseded record 2 brought new key(s)');
    const b = await staging.mirror(env, 'shared', second, { reader: 'job-second' });
    w.end(Buffer.from('{"a":2,"b":3}\n'));
    await new Promise((r) => w.once('finish', r));
    await staging.done(env, w);
    await b.finished;
    expect(await state(second)).toBe('done');
    expect(await readFile(second, 'utf8')).toBe('{"a":1}\n{"a":2,"b":3}\n');

    const refused = await staging.writer(env, 'refused');
    refused.write(Buffer.from('x'));
    const local = join(dir, 'refused');
    const r = await staging.mirror(env, 'refused', local);
    await staging.abort(env, 'refused', 'the upload was refused (too large): nothing was loaded');
    await r.finished;
    expect(await state(local)).toBe('abort the upload was refused (too large): nothing was loaded');
    await refused.discard();
    await expect(staging.download(env, 'refused', join(dir, 'refused-again'))).rejects.toThrow(
      'the upload was refused (too large): nothing was loaded',
    );
  });

  it('a long reason (multibyte, past the marker bound) still ends its reader, cut to the bound', async () => {
    const w = await staging.writer(env, 'long-reason');
    w.write(Buffer.from('x'));
    const local = join(dir, 'long-reason');
    const r = await staging.mirror(env, 'long-reason', local);
    await staging.abort(env, 'long-reason', 'ü'.repeat(5000));
    await r.finished;
    const ended = (await state(local)) as string;
    expect(ended.startsWith('abort üü')).toBe(true);
    expect(Buffer.byteLength(ended)).toBeLessThanOrEqual(4096);
    await w.discard();
  });

  it('a whole stream written at once is downloaded whole; an empty one too', async () => {
    const body = randomBytes(300_000);
    expect(await staging.write(env, 'whole', Readable.from([body]))).toBe(body.length);
    await staging.download(env, 'whole', join(dir, 'whole'));
    expect(sha(await readFile(join(dir, 'whole')))).toBe(sha(body));
    expect(await staging.write(env, 'empty', Readable.from([]))).toBe(0);
    await staging.download(env, 'empty', join(dir, 'empty'));
    expect((await stat(join(dir, 'empty'))).size).toBe(0);
  });

  it('an object store that keeps failing aborts the reader after STAGING_READ_RETRY_SECONDS, saying so', async () => {
    const down = loadConfig(
      testEnv({
        TAPYARD_ENV: env,
        STAGING_READ_RETRY_SECONDS: '1',
        OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
      }),
    );
    const broken = new Staging(down, logger, new ObjectStore(down, logger));
    const local = join(dir, 'unreachable');
    await (
      await broken.mirror(env, 'unreachable', local)
    ).finished;
    expect(await state(local)).toMatch(
      /^abort the object store failed while the job read its input \(.+\); nothing was loaded$/,
    );
  });

  it('a tap run whose records cannot be staged (the store is down) ends saying so, instead of waiting', async () => {
    const minio = Number(new URL(config.objectStore.endpoint as string).port);
    const relay = await cuttableProxy(minio);
    const down = loadConfig(
      testEnv({ TAPYARD_ENV: env, OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${relay.port}` }),
    );
    const broken = new Staging(down, logger, new ObjectStore(down, logger));
    // The buckets are there and known; then the store goes away for good.
    await broken.writer(env, 'warm-up').then((w) => w.destroy());
    relay.cut();
    const load = new RecordsLoad(
      {
        environment: env,
        tap: 't',
        pipeline: 'p',
        publisherToken: 'pub',
        mapKeys: false,
        streamAfter: 0,
        staleMs: 1000,
      },
      // Nothing is queued or reported on this path.
      { config: down, staging: broken, status: null as never, queues: null as never },
    );
    const line = JSON.stringify({ a: 'x'.repeat(100) });
    await load.add({ records: [], text: Array(5000).fill(line).join('\n'), count: 5000, keys: ['a'] }, 0);
    // The idle flush fails in the background first; no listener-less 'error' reaches the process.
    await new Promise((r) => setTimeout(r, 1000));
    await expect(load.finish(null)).resolves.toEqual({ persisted: false, pipelineTokens: [] });
    await relay.close();
  });

  it('names that are not tokens are refused; the sweep removes only inputs older than the TTL', async () => {
    await expect(staging.writer(env, '../raw/x')).rejects.toThrow(/not a staging id/);
    await expect(staging.mirror(env, 'a/b', join(dir, 'x'))).rejects.toThrow(/not a staging id/);
    await staging.write(env, 'abandoned', Readable.from([Buffer.from('1\n')]));
    expect(await staging.sweep(env, 3_600_000)).toBe(0);
    expect(await objects('abandoned')).toHaveLength(2);
    expect(await staging.sweep(env, 0)).toBeGreaterThanOrEqual(1);
    expect(await objects('abandoned')).toEqual([]);
  });
});
