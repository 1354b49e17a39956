import { getQueueToken } from '@nestjs/bullmq';
import { Queue, QueueEvents } from 'bullmq';
import { queuePrefix } from '@tapyard/core';
import { MaintenanceJob, PingResult, QUEUES } from '@tapyard/queue';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_REDIS_URL, uniqueEnvironment } from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { HeldPing } from './support/test-worker';

/**
 * The test hooks (a stage spinning on a marked value, a ping held in flight) are the test worker's
 * (test/support/test-worker.ts): the worker app itself honours neither, whatever its environment or
 * a job's payload says.
 */
describe('test hooks are not in the worker app', () => {
  const env = uniqueEnvironment('hooks');
  const table = `hooks_${env.replace(/[^a-z0-9]/g, '_')}`;
  const MARKER = '__would_spin__';
  let api: TestApi;
  let worker: TestWorker;
  let events: QueueEvents;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: env });
    // The variable the test worker reads, set for the app: it must not spin on it.
    worker = await startWorker({ TAPYARD_ENV: env, STAGE_STALL_MS: '2000', TAPYARD_TEST_SPIN_ON: MARKER });
    events = new QueueEvents(QUEUES.maintenance, {
      connection: { url: TEST_REDIS_URL },
      prefix: queuePrefix(env),
    });
    await events.waitUntilReady();
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
    await events.close();
    await worker.close();
    await api.close();
  });

  it('loads a value holding TAPYARD_TEST_SPIN_ON like any other', async () => {
    const token = await upload(api.http, 'p', `id,v\n1,${MARKER}\n2,ok\n`, 'marked.csv');
    expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
  });

  it('answers a ping at once, whatever `holdMs` its payload carries', async () => {
    const queue = api.app.get<Queue<HeldPing, PingResult>>(getQueueToken(QUEUES.maintenance));
    const job = await queue.add(MaintenanceJob.ping, { requestedAt: Date.now(), holdMs: 600_000 });
    const result = await job.waitUntilFinished(events, 30_000);
    expect(result.environment).toBe(env);
  });
});
