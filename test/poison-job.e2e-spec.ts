import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { uniqueEnvironment } from './support/env';
import { RollupAnswer, csvPipeline, upload, waitForJob } from './support/ingest';

/**
 * A job whose stage makes no progress is stopped by the watchdog, ends `error` naming the stage,
 * and the worker serves other jobs meanwhile. No known input stalls a stage any more (the JSON
 * reader and the regex rules are linear), so the test uses the test worker's hook `spinOn`:
 * a value holding the marker makes DataQuality spin in synchronous code, exactly what a
 * pathological input does to a stage.
 */
describe('poison jobs', () => {
  const env = uniqueEnvironment('poison');
  const table = `poison_${env.replace(/[^a-z0-9]/g, '_')}`;
  let api: TestApi;
  let worker: TestWorker;
  const STALL_MS = 8000;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    worker = await startWorker(
      { TAPYARD_ENV: env, STAGE_STALL_MS: String(STALL_MS), WORKER_CONCURRENCY: '2' },
      { spinOn: '__spin_forever__' },
    );
    await api.http
      .post('/api/v1/pipeline')
      .send(
        csvPipeline('p', table, [
          ['id', 'int'],
          ['v', 'string'],
        ]),
      )
      .expect(200);
  });
  afterAll(async () => {
    await worker.close();
    await api.close();
  });

  const rollup = async (token: string): Promise<RollupAnswer> =>
    (
      await api.http
        .get('/api/v1/pipeline/status')
        .query({ pipelinetoken: token, withrollup: 'true' })
        .expect(200)
    ).body as RollupAnswer;

  it('stops the stuck stage, ends the job error naming it, and serves a normal upload meanwhile', async () => {
    const poison = await upload(api.http, 'p', 'id,v\n1,ok\n2,__spin_forever__\n3,ok\n', 'poison.csv');
    // The poison job is in its stage before the normal one is sent.
    for (const started = Date.now(); ;) {
      const r = await rollup(poison);
      if (r.events.some((e) => e.processName === 'DataQuality' && e.state === 'begin')) break;
      if (Date.now() - started > 60_000) throw new Error('the poison job never started');
      await new Promise((res) => setTimeout(res, 50));
    }
    const normal = await upload(api.http, 'p', 'id,v\n10,a\n11,b\n', 'normal.csv');
    const done = await waitForJob(api.http, normal, 120_000);
    expect(done.rollup.status).toBe('success');
    // The normal job finished while the poison one was still held by its stage.
    expect((await rollup(poison)).rollup.allDone).toBe(false);

    const stopped = await waitForJob(api.http, poison, 120_000);
    expect(stopped.rollup.status).toBe('error');
    expect(stopped.rollup.jobs[0].lastError).toEqual({
      processName: 'DataQuality',
      description: `the DataQuality stage made no progress for ${STALL_MS / 1000} s and was stopped (STAGE_STALL_MS); the input is pathological for it`,
    });

    // The worker goes on: a later upload loads too, and nothing of the poison file was loaded.
    const after = await waitForJob(
      api.http,
      await upload(api.http, 'p', 'id,v\n20,c\n', 'after.csv'),
      120_000,
    );
    expect(after.rollup.status).toBe('success');
  }, 300_000);
});
