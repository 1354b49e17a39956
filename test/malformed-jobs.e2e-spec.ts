import { Job, Queue, QueueEvents } from 'bullmq';
import { queuePrefix } from '@tapyard/core';
import { MaintenanceJob, PingResult, QUEUES } from '@tapyard/queue';
import { TestApi, startApi } from './support/apps';
import { TEST_REDIS_URL, testEnv, uniqueEnvironment } from './support/env';
import { waitForJob } from './support/ingest';
import { Spawned, spawnApp } from './support/processes';

/**
 * Jobs this version cannot run (an unknown name, a payload missing a field or holding one of the wrong
 * type: written by an older or newer version, or by hand) are failed once with a reason naming the job
 * and the field, and the worker goes on with the next job. Written straight to Redis with BullMQ's own
 * Queue, under a real worker process (`npm run build` first).
 */
describe('malformed jobs (real worker process, real Redis)', () => {
  const env = uniqueEnvironment('malformed');
  const opts = { connection: { url: TEST_REDIS_URL }, prefix: queuePrefix(env) };
  const SECRET = 'tok-do-not-log-4711';
  let worker: Spawned;
  let api: TestApi;
  let ingest: Queue;
  let maintenance: Queue;
  let events: QueueEvents;

  beforeAll(async () => {
    ingest = new Queue(QUEUES.ingest, opts);
    maintenance = new Queue(QUEUES.maintenance, opts);
    events = new QueueEvents(QUEUES.maintenance, opts);
    await events.waitUntilReady();
    api = await startApi({ TAPYARD_ENV: env });
    worker = spawnApp('worker', testEnv({ TAPYARD_ENV: env, WORKER_CONCURRENCY: '1' }));
    await worker.waitFor(/Tapyard worker ready/);
  });

  afterAll(async () => {
    worker.child.kill('SIGTERM');
    await worker.exited;
    await ingest.obliterate({ force: true });
    await maintenance.obliterate({ force: true });
    await Promise.all([ingest.close(), maintenance.close(), events.close()]);
    await api.close();
  });

  /** The job once it reached a final state; a bounded wait on its state, not a sleep. */
  async function settled(queue: Queue, job: Job): Promise<Job> {
    for (let i = 0; i < 600; i++) {
      const state = await job.getState();
      if (state === 'failed' || state === 'completed') return (await queue.getJob(job.id!)) as Job;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`job ${job.name} never ended`);
  }

  it('fails a malformed ingest job once, naming job and field, without its secrets; the worker goes on', async () => {
    const payload = {
      environment: env,
      pipeline: 'p',
      pipelineToken: SECRET,
      publisherToken: null,
      filename: 'a.csv',
      // An older version's field name: `staged` is missing.
      stagedId: SECRET,
    };
    // Retries would be spent on a job that can never run: it must fail on its first delivery anyway.
    const bad = await ingest.add('load', payload, { attempts: 5, backoff: { type: 'fixed', delay: 10 } });
    const failed = await settled(ingest, bad);
    expect(await failed.getState()).toBe('failed');
    expect(failed.failedReason).toBe(
      `ingest job 'load' (id ${bad.id}) is malformed: field 'staged' is missing`,
    );
    expect(failed.attemptsMade).toBe(1);
    // Its payload still names a job: whoever waits on that job's status learns it ended, and why. The
    // worker writes that status in BullMQ's `failed` event, just after the job's state turned failed, so
    // the token is unknown (404) for a moment: wait for it, bounded.
    for (let i = 0; i < 200; i++) {
      const res = await api.http.get('/api/v1/pipeline/status').query({ pipelinetoken: SECRET });
      if (res.status !== 404) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const { rollup } = await waitForJob(api.http, SECRET);
    expect(rollup.status).toBe('error');
    expect(rollup.jobs[0].lastError).toEqual({
      processName: 'JobRunner',
      description: `the job could not be run: ${failed.failedReason}`,
    });

    const unknown = await settled(ingest, await ingest.add('reindex', { environment: env }, { attempts: 3 }));
    expect(unknown.failedReason).toBe(
      `ingest job 'reindex' (id ${unknown.id}): no such job (known: load, intake, document)`,
    );

    const wrongType = await settled(
      maintenance,
      await maintenance.add(MaintenanceJob.ping, { requestedAt: SECRET }),
    );
    expect(wrongType.failedReason).toBe(
      `maintenance job 'ping' (id ${wrongType.id}) is malformed: field 'requestedAt' must be a number (got string)`,
    );

    // The same worker process serves a good job after them.
    const good = await maintenance.add(MaintenanceJob.ping, { requestedAt: Date.now() });
    const result = (await good.waitUntilFinished(events, 30_000)) as PingResult;
    expect(result.workerPid).toBe(worker.child.pid);
    expect(worker.child.exitCode).toBeNull();

    // Each failure is logged with its reason, and no payload value reaches the log.
    await worker.waitFor(/field 'requestedAt' must be a number/);
    expect(worker.output()).toContain(`field 'staged' is missing`);
    expect(worker.output()).toContain(`'reindex'`);
    expect(worker.output()).not.toContain(SECRET);
  });
});
