import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger, loadConfig } from '@tapyard/core';
import { FatalReadError, StreamEndedError } from '@tapyard/readers';
import { STAGING_PREFIX, Staging, StagingSignals } from '@tapyard/intake';
import { ObjectStore } from '@tapyard/objectstore';
import { RecordsLoad } from '../libs/taps/src/records-load';
import { closedPort, cuttableProxy } from './support/net';
import { testEnv, uniqueEnvironment } from './support/env';

/**
 * The object-store staging every job input travels through between hosts (real MinIO): a reader
 * gets parts while they are written, and ends as the writer ended.
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
  /** Reads an input to its end; the error it ended with, if any. */
  async function readAll(
    it: AsyncIterable<Buffer>,
  ): Promise<{ bytes: Buffer; parts: number; error: Error | null }> {
    const got: Buffer[] = [];
    try {
      for await (const part of it) got.push(part);
      return { bytes: Buffer.concat(got), parts: got.length, error: null };
    } catch (err) {
      return { bytes: Buffer.concat(got), parts: got.length, error: err as Error };
    }
  }
  const objects = async (id: string) =>
    (await store.list(await store.bucket(env, 'staged'), `${STAGING_PREFIX}${id}/`)).map((o) => o.key);

  it('a reader gets what is written while it is written, and the whole of it once done', async () => {
    const body = randomBytes(10 * 1024 * 1024 + 12_345);
    const w = await staging.writer(env, 'growing');
    const reading = staging.read(env, 'growing', { reader: 'job-a' });
    // The first 5 MiB: more than a part, so the reader has bytes before the writer ends; the first part
    // is 1 MiB, so a job starts on it sooner.
    w.write(body.subarray(0, 5 * 1024 * 1024));
    const first = await reading.next();
    expect(first.done).toBe(false);
    const head = first.value as Buffer;
    expect(head.length).toBe(1024 * 1024);
    // Its own memory: it is handed to the stage thread without a copy.
    expect(head.buffer.byteLength).toBe(head.length);
    w.end(body.subarray(5 * 1024 * 1024));
    await new Promise((r) => w.once('finish', r));
    await staging.done(env, w);
    const rest = await readAll(reading);
    expect(rest.error).toBeNull();
    expect(sha(Buffer.concat([head, rest.bytes]))).toBe(sha(body));
    expect(w.parts).toBeGreaterThanOrEqual(3);
    await staging.remove(env, 'growing');
    expect(await objects('growing')).toEqual([]);
  });

  it('parts stay within their size whatever one write holds', async () => {
    const w = await staging.writer(env, 'one-big-write');
    w.end(randomBytes(9 * 1024 * 1024 + 1));
    await new Promise((r) => w.once('finish', r));
    const sizes = (
      await store.list(await store.bucket(env, 'staged'), `${STAGING_PREFIX}one-big-write/`)
    ).map((o) => o.size);
    expect(sizes.sort((a, b) => b - a)).toEqual([4 << 20, 4 << 20, 1 << 20, 1]);
    await staging.remove(env, 'one-big-write');
  });

  it("a slow writer's few bytes still reach the reader before the writer ends; a stopped read ends quietly", async () => {
    const w = await staging.writer(env, 'trickle');
    const stop = new AbortController();
    const reading = staging.read(env, 'trickle', { signal: stop.signal });
    w.write(Buffer.from('id,name\n1,a\n'));
    expect(((await reading.next()).value as Buffer).toString()).toBe('id,name\n1,a\n');
    const next = reading.next();
    stop.abort();
    expect((await next).done).toBe(true);
    await w.discard();
    await staging.remove(env, 'trickle');
  });

  it('a writer silent for the stale time without an end fails its reader, saying so', async () => {
    const w = await staging.writer(env, 'silent');
    w.write(Buffer.from('a\n'));
    // The part is in the store first (a loaded machine's PUT can outlast the stale time on its own).
    const first = staging.read(env, 'silent');
    expect(((await first.next()).value as Buffer).toString()).toBe('a\n');
    await first.return(undefined);
    const r = await readAll(staging.read(env, 'silent', { staleMs: 500 }));
    expect(r.bytes.toString()).toBe('a\n');
    expect(r.error).toBeInstanceOf(FatalReadError);
    expect(r.error?.message).toBe('the data stopped arriving (nothing for 1 s); nothing was loaded');
    await w.discard();
    await staging.remove(env, 'silent');
  });

  it("an aborted input ends its reader with the writer's reason; one reader can be told to stop while another reads on", async () => {
    const w = await staging.writer(env, 'shared');
    w.write(Buffer.from('{"a":1}\n'));
    const first = staging.read(env, 'shared', { reader: 'job-first' });
    expect(((await first.next()).value as Buffer).toString()).toBe('{"a":1}\n');
    await staging.supersede(env, 'shared', 'job-first', 'record 2 brought new key(s)');
    const a = await readAll(first);
    expect(a.error).toBeInstanceOf(StreamEndedError);
    expect(a.error).toMatchObject({ superseded: true, message: 'record 2 brought new key(s)' });
    const second = readAll(staging.read(env, 'shared', { reader: 'job-second' }));
    w.end(Buffer.from('{"a":2,"b":3}\n'));
    await new Promise((r) => w.once('finish', r));
    await staging.done(env, w);
    const b = await second;
    expect(b.error).toBeNull();
    expect(b.bytes.toString()).toBe('{"a":1}\n{"a":2,"b":3}\n');

    const refused = await staging.writer(env, 'refused');
    refused.write(Buffer.from('x'));
    const reading = readAll(staging.read(env, 'refused'));
    await staging.abort(env, 'refused', 'the upload was refused (too large): nothing was loaded');
    const r = await reading;
    expect(r.error).toBeInstanceOf(StreamEndedError);
    expect(r.error).toMatchObject({
      superseded: false,
      message: 'the upload was refused (too large): nothing was loaded',
    });
    await refused.discard();
    await expect(staging.download(env, 'refused', join(dir, 'refused-again'))).rejects.toThrow(
      'the upload was refused (too large): nothing was loaded',
    );
  });

  it('a long reason (multibyte, past the marker bound) still ends its reader, cut to the bound', async () => {
    const w = await staging.writer(env, 'long-reason');
    w.write(Buffer.from('x'));
    const reading = readAll(staging.read(env, 'long-reason'));
    await staging.abort(env, 'long-reason', 'ü'.repeat(5000));
    const reason = (await reading).error?.message as string;
    expect(reason.startsWith('üü')).toBe(true);
    expect(Buffer.byteLength(`abort ${reason}`)).toBeLessThanOrEqual(4096);
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

  it('a finished input is downloaded by its end marker: one request per part and one for the marker, none for a missing part', async () => {
    const body = randomBytes(9 * 1024 * 1024 + 7);
    await staging.write(env, 'finished', Readable.from([body]));
    const gets = jest.spyOn(store, 'getBuffer');
    try {
      await staging.download(env, 'finished', join(dir, 'finished'));
      const keys = gets.mock.calls.map((c) => c[1].slice(`${STAGING_PREFIX}finished/`.length));
      expect(keys).toEqual(['end', 'part-000000', 'part-000001', 'part-000002', 'part-000003']);
    } finally {
      gets.mockRestore();
    }
    expect(sha(await readFile(join(dir, 'finished')))).toBe(sha(body));
  });

  it('a download begun while its input is still written waits for the rest and gets the whole of it', async () => {
    const body = randomBytes(5 * 1024 * 1024 + 99);
    const w = await staging.writer(env, 'unfinished');
    w.write(body.subarray(0, 4 * 1024 * 1024 + 1));
    const downloading = staging.download(env, 'unfinished', join(dir, 'unfinished'));
    // The first part reaches the store while the download waits for the end marker.
    for (let i = 0; i < 200 && (await objects('unfinished')).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    w.end(body.subarray(4 * 1024 * 1024 + 1));
    await new Promise<void>((resolve, reject) => w.on('finish', resolve).on('error', reject));
    await staging.done(env, w);
    await downloading;
    expect(sha(await readFile(join(dir, 'unfinished')))).toBe(sha(body));
  });

  it('an object store that keeps failing fails the reader after STAGING_READ_RETRY_SECONDS, saying so', async () => {
    const down = loadConfig(
      testEnv({
        TAPYARD_ENV: env,
        STAGING_READ_RETRY_SECONDS: '1',
        OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
      }),
    );
    const broken = new Staging(down, logger, new ObjectStore(down, logger));
    const r = await readAll(broken.read(env, 'unreachable'));
    expect(r.error).toBeInstanceOf(FatalReadError);
    expect(r.error?.message).toMatch(
      /^the object store failed while the job read its input \(.+\); nothing was loaded$/,
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

  /** The real store, counting the object reads a reader makes. */
  class CountingStore extends ObjectStore {
    gets = 0;
    /** Reads of objects that were not there. */
    misses = 0;
    override async getBuffer(bucket: string, key: string, maxBytes: number): Promise<Buffer | null> {
      this.gets++;
      const got = await super.getBuffer(bucket, key, maxBytes);
      if (got === null) this.misses++;
      return got;
    }
  }

  /** Reads `id` while a writer writes one line, waits `idleMs` with the reader waiting, then ends with a second. */
  async function waitingReader(
    s: Staging,
    counting: CountingStore,
    id: string,
    idleMs: number,
    ready: () => boolean = () => true,
  ): Promise<{ got: string; requestsWhileIdle: number }> {
    const w = await s.writer(env, id);
    const reading = s.read(env, id, { reader: `job-${id}` });
    w.write(Buffer.from('1,a\n'));
    let got = ((await reading.next()).value as Buffer).toString();
    for (let i = 0; i < 200 && !ready(); i++) await sleep(25);
    expect(ready()).toBe(true);
    const before = counting.gets;
    const next = reading.next();
    // The reader waits for the next part meanwhile: what it asks the store while nothing arrives.
    await sleep(idleMs);
    const requestsWhileIdle = counting.gets - before;
    w.end(Buffer.from('2,b\n'));
    await new Promise((r) => w.once('finish', r));
    await s.done(env, w);
    got += ((await next).value as Buffer).toString();
    expect((await reading.next()).done).toBe(true);
    await s.remove(env, id);
    return { got, requestsWhileIdle };
  }

  it('a reader waiting on a writer asks the store when the writer signals a part, not every few milliseconds', async () => {
    const counting = new CountingStore(config, logger);
    const signals = new StagingSignals(config, logger);
    try {
      const r = await waitingReader(
        new Staging(config, logger, counting, signals),
        counting,
        'signalled',
        1500,
        () => signals.live,
      );
      expect(r.got).toBe('1,a\n2,b\n');
      // Polling, the reader asked twice (part, end marker) every 20 ms or so: over a hundred reads in 1.5 s.
      // Signalled, it looks once on its own after SIGNALLED_POLL_MS (part, end, stop marker).
      expect(r.requestsWhileIdle).toBeLessThanOrEqual(8);
    } finally {
      signals.onModuleDestroy();
    }
  });

  it('a reader of a writer that counts its parts asks the store only for parts that exist', async () => {
    const counting = new CountingStore(config, logger);
    const signals = new StagingSignals(config, logger);
    try {
      const s = new Staging(config, logger, counting, signals);
      const w = await s.writer(env, 'counted');
      const reading = readAll(s.read(env, 'counted', { reader: 'job-counted' }));
      for (let i = 0; i < 200 && !signals.live; i++) await sleep(25);
      expect(signals.live).toBe(true);
      // Until the subscription was up the reader polled: its misses then are not the point.
      const before = counting.misses;
      const parts = [1, 2, 3, 4, 5, 6].map(() => randomBytes(4 << 20));
      for (const part of parts) {
        await new Promise<void>((r, j) => w.write(part, (err) => (err ? j(err) : r())));
        // The reader catches up and waits for the next part, as it does behind an upload.
        await sleep(150);
      }
      w.end();
      await new Promise((r) => w.once('finish', r));
      await s.done(env, w);
      const got = await reading;
      expect(got.error).toBeNull();
      expect(sha(got.bytes)).toBe(sha(Buffer.concat(parts)));
      // Without counts the reader asked for the part after each one and for the end marker (and its
      // stop marker), none there yet: two or three misses a part (20 here). Now a poll that may have
      // been on its way when the subscription came up, then only once the end is announced: the part
      // after the last one, and the stop marker looked for before an end is taken.
      expect(counting.misses - before).toBeLessThanOrEqual(5);
      await s.remove(env, 'counted');
    } finally {
      signals.onModuleDestroy();
    }
  });

  it('without Redis a reader polls and still gets every part; a writer that does not signal is polled too', async () => {
    const noRedis = loadConfig(
      testEnv({ TAPYARD_ENV: env, REDIS_URL: `redis://127.0.0.1:${await closedPort()}` }),
    );
    const counting = new CountingStore(noRedis, logger);
    const signals = new StagingSignals(noRedis, logger);
    try {
      const r = await waitingReader(
        new Staging(noRedis, logger, counting, signals),
        counting,
        'unsignalled',
        1000,
      );
      expect(r.got).toBe('1,a\n2,b\n');
      expect(signals.live).toBe(false);
      // Polled: the part and the end marker every 20 ms or so.
      expect(r.requestsWhileIdle).toBeGreaterThan(8);
    } finally {
      signals.onModuleDestroy();
    }
    // The reader listens, the writer (an older host, or one whose Redis is away) never signals.
    const readerSignals = new StagingSignals(config, logger);
    const silentWriter = new Staging(config, logger, new ObjectStore(config, logger));
    const reader = new Staging(config, logger, counting, readerSignals);
    try {
      const w = await silentWriter.writer(env, 'silent-writer');
      const reading = readAll(reader.read(env, 'silent-writer'));
      for (const line of ['1\n', '2\n', '3\n']) {
        w.write(Buffer.from(line));
        await sleep(300);
      }
      w.end();
      await new Promise((r) => w.once('finish', r));
      await silentWriter.done(env, w);
      const got = await reading;
      expect(got.error).toBeNull();
      expect(got.bytes.toString()).toBe('1\n2\n3\n');
      await silentWriter.remove(env, 'silent-writer');
    } finally {
      readerSignals.onModuleDestroy();
    }
  });

  it('names that are not tokens are refused; the sweep removes only inputs older than the TTL', async () => {
    await expect(staging.writer(env, '../raw/x')).rejects.toThrow(/not a staging id/);
    await expect(staging.read(env, 'a/b').next()).rejects.toThrow(/not a staging id/);
    await staging.write(env, 'abandoned', Readable.from([Buffer.from('1\n')]));
    expect(await staging.sweep(env, 3_600_000)).toBe(0);
    expect(await objects('abandoned')).toHaveLength(2);
    expect(await staging.sweep(env, 0)).toBeGreaterThanOrEqual(1);
    expect(await objects('abandoned')).toEqual([]);
  });
});
