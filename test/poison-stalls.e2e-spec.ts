import { TestApi, startApi } from './support/apps';
import { testEnv, uniqueEnvironment } from './support/env';
import { RollupAnswer, csvPipeline, upload, waitForJob } from './support/ingest';
import { Spawned, spawnApp } from './support/processes';

/**
 * A job whose workers keep dying under it is handed on at most WORKER_MAX_STALLS times, then ends
 * `error` and no worker takes it again. The workers are real processes killed without warning while
 * the job holds them (the spin hook keeps it in DataQuality; the watchdog is set far away).
 */
describe('jobs that stall workers', () => {
  const env = uniqueEnvironment('stalls');
  const table = `stalls_${env.replace(/[^a-z0-9]/g, '_')}`;
  let api: TestApi;
  const workers: Spawned[] = [];

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    await api.http
      .post('/api/v1/pipeline')
      .send(csvPipeline('p', table, [['v', 'string']]))
      .expect(200);
  });
  afterAll(async () => {
    for (const w of workers) {
      if (w.child.exitCode === null) w.child.kill('SIGKILL');
      await w.exited;
    }
    await api.close();
  });

  const workerEnv = testEnv({
    TAPYARD_ENV: env,
    WORKER_LOCK_MS: '2000',
    WORKER_MAX_STALLS: '1',
    STAGE_STALL_MS: '600000',
    TAPYARD_TEST_SPIN_ON: '__hold_the_worker__',
  });
  const events = async (token: string): Promise<RollupAnswer> =>
    (
      await api.http
        .get('/api/v1/pipeline/status')
        .query({ pipelinetoken: token, withrollup: 'true' })
        .expect(200)
    ).body as RollupAnswer;
  const deliveries = async (token: string): Promise<number> =>
    (await events(token)).events.filter((e) => e.processName === 'DataQuality' && e.state === 'begin').length;
  async function waitForDeliveries(token: string, n: number): Promise<void> {
    for (const started = Date.now(); (await deliveries(token)) < n;) {
      if (Date.now() - started > 120_000) throw new Error(`delivery ${n} never started`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  async function worker(): Promise<Spawned> {
    const w = spawnApp('test-worker', workerEnv);
    workers.push(w);
    await w.waitFor(/Tapyard worker ready/);
    return w;
  }

  it('hands the job on WORKER_MAX_STALLS times, then ends it error without running it again', async () => {
    const first = await worker();
    const token = await upload(api.http, 'p', 'v\nfine\n__hold_the_worker__\n', 'held.csv');
    await waitForDeliveries(token, 1);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await worker();
    await waitForDeliveries(token, 2);
    second.child.kill('SIGKILL');
    await second.exited;

    await worker();
    const { rollup } = await waitForJob(api.http, token, 120_000);
    expect(rollup.status).toBe('error');
    expect(rollup.jobs[0].lastError).toEqual({
      processName: 'JobRunner',
      description: expect.stringMatching(
        /^the job was abandoned after repeated worker failures: job stalled more than allowable limit/,
      ),
    });
    expect(await deliveries(token)).toBe(2);
  }, 300_000);
});
