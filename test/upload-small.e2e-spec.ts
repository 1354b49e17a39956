import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { LoadTarget, PostgresDestination } from '@tapyard/destinations';
import { INLINE_UPLOAD_BYTES } from '@tapyard/queue';
import { StatusService } from '@tapyard/status';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { closedPort } from './support/net';
import { idLabelPipeline, upload, waitForJob } from './support/ingest';

/**
 * A small upload (its request at most INLINE_UPLOAD_BYTES) is carried in its job: nothing of it goes
 * through the staging object store, so it loads even while that store is unreachable. A larger one
 * is staged as before, and refused while the store is down. Its job is read, checked and loaded on
 * the worker's main thread, its rejects kept in memory: the worker here has no usable spool
 * directory (a file stands where it should be), which a job through the stage thread needs.
 */
/** A clean small upload's events, in the contract's order. */
const CONTRACT_EVENTS = [
  'StreamNotifier begin',
  'StreamNotifier end',
  'JobRunner begin',
  'DataQuality begin',
  'PostgresLoader begin',
  'DataQuality end',
  'PostgresLoader end',
  'JobRunner end',
];

describe('small uploads carried in their job', () => {
  const env = uniqueEnvironment('upsmall');
  const table = `upsmall_${env.replace(/[^a-z0-9]/g, '_')}`;
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  const scratch = mkdtempSync(join(tmpdir(), 'upsmall-'));
  const notADirectory = join(scratch, 'spool');
  writeFileSync(notADirectory, '');

  beforeAll(async () => {
    const flags = {
      TAPYARD_ENV: env,
      STAGING_OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
      STAGING_READ_RETRY_SECONDS: '1',
    };
    api = await startApi(flags);
    worker = await startWorker({ ...flags, TAPYARD_SPOOL_DIR: notADirectory });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await idLabelPipeline(api.http, 'small', table);
  });
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  const csv = (rows: number): string =>
    `id,label\n${Array.from({ length: rows }, (_, i) => `${i},label ${i}`).join('\n')}\n`;

  it('loads a small file without the staging store, with the contract events in order', async () => {
    const token = await upload(api.http, 'small', csv(50), 'small.csv');
    const done = await waitForJob(api.http, token);
    expect(done.rollup.status).toBe('success');
    const { rows } = await pg.query(`SELECT count(*)::int AS n FROM ingest_test."${table}"`);
    expect(rows[0].n).toBe(50);
    expect(done.events.map((e) => `${e.processName} ${e.state}`)).toEqual(CONTRACT_EVENTS);
    const epochs = done.events.map((e) => e.epoch);
    expect([...epochs].sort((a, b) => a - b)).toEqual(epochs);
  });

  it("is queued without waiting for its intake entries' write: the job writes them first if it ends first", async () => {
    const apiStatus = api.app.get(StatusService);
    const write = apiStatus.recordAll.bind(apiStatus);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The API's write of this upload's entries waits until its job has ended.
    const spy = jest.spyOn(apiStatus, 'recordAll').mockImplementation(async (job, events) => {
      if (job.filename === 'held.csv') await held;
      return write(job, events);
    });
    try {
      const answered = upload(api.http, 'small', csv(7), 'held.csv');
      const ended = async (): Promise<boolean> =>
        (
          await pg.query(
            `SELECT 1 FROM tapyard.jobs WHERE environment = $1 AND filename = 'held.csv' AND ended_at IS NOT NULL`,
            [env],
          )
        ).rowCount === 1;
      const deadline = Date.now() + 30_000;
      while (!(await ended())) {
        if (Date.now() > deadline) throw new Error('the job did not end while the intake write was held');
        await new Promise((r) => setTimeout(r, 20));
      }
      release();
      const token = await answered;
      const done = await waitForJob(api.http, token);
      expect(done.rollup.status).toBe('success');
      expect(done.events.map((e) => `${e.processName} ${e.state}`)).toEqual(CONTRACT_EVENTS);
      expect(spy.mock.calls.filter(([job]) => job.filename === 'held.csv')).toHaveLength(1);
    } finally {
      release();
      spy.mockRestore();
    }
  });

  it('writes its intake entries again when the first write fails', async () => {
    const apiStatus = api.app.get(StatusService);
    const write = apiStatus.recordAll.bind(apiStatus);
    let failures = 1;
    const spy = jest.spyOn(apiStatus, 'recordAll').mockImplementation(async (job, events) => {
      if (job.filename === 'again.csv' && failures-- > 0) throw new Error('connection terminated');
      return write(job, events);
    });
    try {
      const token = await upload(api.http, 'small', csv(4), 'again.csv');
      // Answered once they are written: the status is there at once.
      const first = await api.http.get('/api/v1/pipeline/status').query({ pipelinetoken: token });
      expect(first.status).toBe(200);
      expect(spy.mock.calls.filter(([job]) => job.filename === 'again.csv')).toHaveLength(2);
      const done = await waitForJob(api.http, token);
      expect(done.rollup.status).toBe('success');
      expect(done.events.filter((e) => e.processName === 'StreamNotifier')).toHaveLength(2);
    } finally {
      spy.mockRestore();
    }
  });

  it('stands when its intake entries cannot be written: its job writes them', async () => {
    const apiStatus = api.app.get(StatusService);
    const write = apiStatus.recordAll.bind(apiStatus);
    const spy = jest.spyOn(apiStatus, 'recordAll').mockImplementation(async (job, events) => {
      if (job.filename === 'unwritten.csv') throw new Error('connection terminated');
      return write(job, events);
    });
    try {
      const token = await upload(api.http, 'small', csv(4), 'unwritten.csv');
      // Found once the job wrote them (with its own).
      const deadline = Date.now() + 30_000;
      while ((await api.http.get('/api/v1/pipeline/status').query({ pipelinetoken: token })).status === 404) {
        if (Date.now() > deadline) throw new Error('the job never wrote the intake entries');
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(spy.mock.calls.filter(([job]) => job.filename === 'unwritten.csv')).toHaveLength(3);
      const done = await waitForJob(api.http, token);
      expect(done.rollup.status).toBe('success');
      expect(done.events.slice(0, 3).map((e) => `${e.processName} ${e.state}`)).toEqual([
        'StreamNotifier begin',
        'StreamNotifier end',
        'JobRunner begin',
      ]);
    } finally {
      spy.mockRestore();
    }
  });

  it('checks a small file on the main thread: its bad rows are rejected with their reasons, the rest load', async () => {
    const before = await pg.query(`SELECT count(*)::int AS n FROM ingest_test."${table}"`);
    const token = await upload(api.http, 'small', 'id,label\n1,one\nx,two\n3,three\n', 'rejects.csv');
    const done = await waitForJob(api.http, token);
    expect(done.rollup.status).toBe('warning');
    const after = await pg.query(`SELECT count(*)::int AS n FROM ingest_test."${table}"`);
    expect(after.rows[0].n - before.rows[0].n).toBe(2);
    const rejects = await pg.query(
      `SELECT line::int, stage, raw, reason FROM ingest_test."${table}_rejects" WHERE pipeline_token = $1`,
      [token],
    );
    expect(rejects.rows).toEqual([
      { line: 3, stage: 'DataQuality', raw: 'x,two', reason: expect.stringMatching(/id/) },
    ]);
  });

  it("tells its PostgreSQL loader the carried input's size, so the job skips the separate ledger check", async () => {
    const dest = worker.app.get(PostgresDestination);
    const committed = jest.spyOn(dest, 'committed');
    const load = jest.spyOn(dest, 'load');
    try {
      const file = csv(20);
      const token = await upload(api.http, 'small', file, 'carried.csv');
      expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
      const ofJob = (calls: [LoadTarget, ...unknown[]][]) => calls.filter(([t]) => t.pipelineToken === token);
      expect(ofJob(committed.mock.calls)).toEqual([
        [expect.objectContaining({ carriedBytes: Buffer.byteLength(file) })],
      ]);
      const asked = committed.mock.calls.findIndex(([t]) => t.pipelineToken === token);
      expect(await committed.mock.results[asked].value).toBeNull();
      expect(ofJob(load.mock.calls)).toHaveLength(1);
    } finally {
      committed.mockRestore();
      load.mockRestore();
    }
  });

  it('does not ask whether the job already ended on its first start (its token is new), only after a retry', async () => {
    const ended = jest.spyOn(worker.app.get(StatusService), 'ended');
    try {
      const token = await upload(api.http, 'small', csv(5), 'first.csv');
      expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
      expect(ended.mock.calls.filter(([, t]) => t === token)).toEqual([]);
    } finally {
      ended.mockRestore();
    }
  });

  it('refuses a publisher token sent after the file when the pipeline came before it, as a streamed upload does', async () => {
    const res = await api.http
      .post('/api/v1/pipeline/upload')
      .field('pipeline', 'small')
      .attach('file', Buffer.from(csv(3)), 'late.csv')
      .field('publishertoken', `${env}-late`);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/publishertoken' must come before 'file'/);
  });

  it('stages a file past the bound, which the unreachable store then refuses', async () => {
    const big = csv(Math.ceil(INLINE_UPLOAD_BYTES / 10));
    expect(big.length).toBeGreaterThan(INLINE_UPLOAD_BYTES);
    const res = await api.http
      .post('/api/v1/pipeline/upload')
      .field('pipeline', 'small')
      .attach('file', Buffer.from(big), 'big.csv');
    expect(res.status).toBe(503);
  });
});
