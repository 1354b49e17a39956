import { Client } from 'pg';
import { IngestionRunner } from '@tapyard/ingestion';
import { IngestPayload, INLINE_UPLOAD_BYTES } from '@tapyard/queue';
import { WorkerDrain } from '../apps/worker/src/worker-drain';
import { WorkerMetrics } from '../apps/worker/src/worker-metrics';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { idLabelPipeline, upload, waitForJob } from './support/ingest';

/**
 * A worker's slots (WORKER_CONCURRENCY) are more than its places for large jobs
 * (LARGE_JOB_CONCURRENCY): a job reading a staged input waits in the process for a place, while a
 * small upload carried in its job needs none and runs at once beside it.
 */
describe('large jobs wait for a place; small uploads do not', () => {
  const env = uniqueEnvironment('places');
  const table = `places_${env.replace(/[^a-z0-9]/g, '_')}`;
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    worker = await startWorker({ TAPYARD_ENV: env, WORKER_CONCURRENCY: '4', LARGE_JOB_CONCURRENCY: '1' });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await idLabelPipeline(api.http, 'places', table);
  });
  afterAll(async () => {
    await pg.end();
    await worker.close();
    await api.close();
  });

  const csv = (rows: number): string =>
    `id,label\n${Array.from({ length: rows }, (_, i) => `${i},label number ${i}`).join('\n')}\n`;
  const begun = async (token: string): Promise<boolean> =>
    (
      await pg.query(
        `SELECT 1 FROM tapyard.status_events WHERE environment = $1 AND pipeline_token = $2 AND process_name = 'JobRunner'`,
        [env, token],
      )
    ).rowCount !== 0;

  /** The worker's run of the job of `filename` waits, once begun, until `release` is called. */
  const holdRun = (filename: string) => {
    const runner = worker.app.get(IngestionRunner);
    const run = runner.run.bind(runner);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const holds = new Promise<void>((resolve) => (holding = resolve));
    const spy = jest.spyOn(runner, 'run').mockImplementation(async (p: IngestPayload, attempt) => {
      if (p.filename === filename) {
        holding();
        await held;
      }
      return run(p, attempt);
    });
    return { spy, holds, release };
  };

  it('runs a small upload while one large job holds the only place and another waits for it', async () => {
    const large = csv(3000);
    expect(Buffer.byteLength(large)).toBeGreaterThan(INLINE_UPLOAD_BYTES);
    const { spy, holds, release } = holdRun('first.csv');
    try {
      const first = await upload(api.http, 'places', large, 'first.csv');
      await holds;
      const second = await upload(api.http, 'places', large, 'second.csv');
      const small = await upload(api.http, 'places', csv(5), 'small.csv');
      expect((await waitForJob(api.http, small)).rollup.status).toBe('success');
      // The second large job is taken from the queue but waits for the place, before anything of it runs.
      expect(await begun(second)).toBe(false);
      const scraped = await worker.app.get(WorkerMetrics).exposition();
      expect(scraped).toMatch(/^tapyard_large_jobs\{state="running"[^}]*\} 1$/m);
      expect(scraped).toMatch(/^tapyard_large_jobs\{state="waiting"[^}]*\} 1$/m);
      expect(spy.mock.calls.some(([p]) => p.filename === 'second.csv')).toBe(false);
      release();
      for (const token of [first, second])
        expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
      const { rows } = await pg.query(`SELECT count(*)::int AS n FROM ingest_test."${table}"`);
      expect(rows[0].n).toBe(6005);
    } finally {
      release();
      spy.mockRestore();
    }
  });

  it('on shutdown sends a job waiting for a place back to its queue, where another worker takes it', async () => {
    const before = Number(
      (await pg.query(`SELECT count(*)::int AS n FROM ingest_test."${table}"`)).rows[0].n,
    );
    const large = csv(3000);
    const { spy, holds, release } = holdRun('running.csv');
    let other: TestWorker | null = null;
    try {
      const running = await upload(api.http, 'places', large, 'running.csv');
      await holds;
      const waiting = await upload(api.http, 'places', large, 'waiting.csv');
      // Taken by this worker, waiting for the place.
      await new Promise((r) => setTimeout(r, 300));
      const drained = worker.app.get(WorkerDrain).drain();
      await new Promise((r) => setTimeout(r, 300));
      release();
      expect(await drained).toBe('finished');
      expect((await waitForJob(api.http, running)).rollup.status).toBe('success');
      expect(await begun(waiting)).toBe(false);
      expect(spy.mock.calls.some(([p]) => p.filename === 'waiting.csv')).toBe(false);
      other = await startWorker({ TAPYARD_ENV: env });
      const done = await waitForJob(api.http, waiting);
      expect(done.rollup.status).toBe('success');
      // One delivery: no retry note in its status.
      expect(done.events.filter((e) => e.processName === 'JobRunner' && e.state === 'begin')).toHaveLength(1);
      const { rows } = await pg.query(`SELECT count(*)::int AS n FROM ingest_test."${table}"`);
      expect(rows[0].n - before).toBe(6000);
    } finally {
      release();
      spy.mockRestore();
      await other?.close();
    }
  });
});
