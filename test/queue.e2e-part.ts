import { getQueueToken } from '@nestjs/bullmq';
import { Job, Queue, QueueEvents } from 'bullmq';
import Redis from 'ioredis';
import { queuePrefix } from '@tapyard/core';
import { MaintenanceJob, PingPayload, PingResult, QUEUES } from '@tapyard/queue';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_REDIS_URL, uniqueEnvironment } from './support/env';

describe('queues (real Redis): API enqueues, the worker app processes, per environment', () => {
  const envA = uniqueEnvironment('q-a');
  const envB = uniqueEnvironment('q-b');
  let api: TestApi;
  let workerB: TestWorker;
  let queue: Queue<PingPayload, PingResult>;
  let events: QueueEvents;

  beforeAll(async () => {
    api = await startApi({ TAPYARD_ENV: envA });
    workerB = await startWorker({ TAPYARD_ENV: envB });
    queue = api.app.get<Queue<PingPayload, PingResult>>(getQueueToken(QUEUES.maintenance));
    events = new QueueEvents(QUEUES.maintenance, {
      connection: { url: TEST_REDIS_URL },
      prefix: queuePrefix(envA),
    });
    await events.waitUntilReady();
  });

  afterAll(async () => {
    await queue.obliterate({ force: true });
    await events.close();
    await workerB.close();
    await api.close();
  });

  it('keeps environments apart: a worker of another environment never takes the job', async () => {
    const job: Job<PingPayload, PingResult> = await queue.add(MaintenanceJob.ping, {
      requestedAt: Date.now(),
    });
    await new Promise((r) => setTimeout(r, 1000));
    expect(await job.getState()).toBe('waiting');

    // A worker of the job's own environment picks it up.
    const workerA = await startWorker({ TAPYARD_ENV: envA });
    try {
      const result = await job.waitUntilFinished(events, 10000);
      expect(result.environment).toBe(envA);
      expect(result.handledAt).toBeGreaterThanOrEqual(result.requestedAt);
    } finally {
      await workerA.close();
    }
  });

  it('namespaces every Redis key of a queue by environment', async () => {
    expect(queue.opts.prefix).toBe(`tapyard:${envA}`);
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const keys = await redis.keys(`tapyard:${envA}:maintenance:*`);
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.every((k) => k.startsWith(`tapyard:${envA}:`))).toBe(true);
    } finally {
      redis.disconnect();
    }
  });
});
