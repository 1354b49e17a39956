import { Job, Queue, QueueEvents } from 'bullmq';
import { queuePrefix } from '@tapyard/core';
import { MaintenanceJob, PingResult, QUEUES } from '@tapyard/queue';
import { testEnv, TEST_REDIS_URL, uniqueEnvironment } from './support/env';
import { blackhole, closedPort } from './support/net';
import { spawnApp } from './support/processes';
import { HeldPing } from './support/test-worker';

/** The built apps as real processes: boot errors, scale-out and graceful shutdown. */
describe('api and worker processes', () => {
  it('a bad configuration stops boot with a message naming the variable', async () => {
    const api = spawnApp('api', testEnv({ PORT: 'eighty', USE_API_KEYS: 'sometimes' }));
    expect(await api.exited).toBe(1);
    expect(api.output()).toContain('PORT must be an integer between 1 and 65535 (got "eighty")');
    expect(api.output()).toContain('USE_API_KEYS must be true or false (got "sometimes")');

    const worker = spawnApp('worker', testEnv({ TAPYARD_MASTER_KEY: undefined }));
    expect(await worker.exited).toBe(1);
    expect(worker.output()).toContain('TAPYARD_MASTER_KEY is not set');
  });

  it('an unreachable Postgres stops boot with a clear message and no credentials', async () => {
    const port = await closedPort();
    const api = spawnApp(
      'api',
      testEnv({
        DATABASE_URL: `postgres://admin:pg-pass-9@127.0.0.1:${port}/x`,
        // Tried twice, 3 s apart (9 retries by default, for a server still starting beside it).
        DATABASE_CONNECT_RETRIES: '1',
        PORT: String(await closedPort()),
      }),
    );
    expect(await api.exited).toBe(1);
    expect(api.output()).toContain('cannot connect to PostgreSQL (DATABASE_URL)');
    expect(api.output()).not.toContain('pg-pass-9');
    // One retry logged (nine by default), then the exit.
    expect(api.output().match(/Unable to connect to the database\. Retrying \(\d+\)/g)).toEqual([
      'Unable to connect to the database. Retrying (1)',
    ]);
  });

  describe('workers', () => {
    const env = uniqueEnvironment('proc');
    let queue: Queue<HeldPing, PingResult>;
    let events: QueueEvents;

    beforeAll(async () => {
      const opts = { connection: { url: TEST_REDIS_URL }, prefix: queuePrefix(env) };
      queue = new Queue(QUEUES.maintenance, opts);
      events = new QueueEvents(QUEUES.maintenance, opts);
      await events.waitUntilReady();
    });

    afterAll(async () => {
      await queue.obliterate({ force: true });
      await queue.close();
      await events.close();
    });

    it('two worker processes share one queue', async () => {
      const w1 = spawnApp('test-worker', testEnv({ TAPYARD_ENV: env, WORKER_CONCURRENCY: '1' }));
      const w2 = spawnApp('test-worker', testEnv({ TAPYARD_ENV: env, WORKER_CONCURRENCY: '1' }));
      try {
        await Promise.all([w1.waitFor(/Tapyard worker ready/), w2.waitFor(/Tapyard worker ready/)]);
        const jobs = await queue.addBulk(
          Array.from({ length: 8 }, () => ({
            name: MaintenanceJob.ping,
            data: { requestedAt: Date.now(), holdMs: 150 },
          })),
        );
        const results = await Promise.all(jobs.map((j) => j.waitUntilFinished(events, 15000)));
        expect(new Set(results.map((r) => r.workerPid))).toEqual(new Set([w1.child.pid, w2.child.pid]));
      } finally {
        w1.child.kill('SIGTERM');
        w2.child.kill('SIGTERM');
        await Promise.all([w1.exited, w2.exited]);
      }
    });

    it('on SIGTERM a worker finishes its in-flight job, then exits 0', async () => {
      const w = spawnApp('test-worker', testEnv({ TAPYARD_ENV: env }));
      await w.waitFor(/Tapyard worker ready/);
      const job: Job<HeldPing, PingResult> = await queue.add(MaintenanceJob.ping, {
        requestedAt: Date.now(),
        holdMs: 1500,
      });
      for (let i = 0; i < 100 && (await job.getState()) !== 'active'; i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(await job.getState()).toBe('active');
      w.child.kill('SIGTERM');
      const result = await job.waitUntilFinished(events, 10000);
      expect(result.workerPid).toBe(w.child.pid);
      expect(await w.exited).toBe(0);
    });
  });

  it('on SIGTERM the API finishes in-flight requests, then exits 0', async () => {
    const hang = await blackhole();
    const port = await closedPort();
    const api = spawnApp('api', testEnv({ PORT: String(port), KAFKA_BROKERS: `127.0.0.1:${hang.port}` }));
    try {
      await api.waitFor(/Tapyard API listening/);
      // The health probe of a hanging Kafka keeps this request in flight for ~2 s.
      const inFlight = fetch(`http://127.0.0.1:${port}/api/v1/health/services`);
      await new Promise((r) => setTimeout(r, 300));
      api.child.kill('SIGTERM');
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(((await res.json()) as { kafka: { status: string } }).kafka.status).toBe('down');
      expect(await api.exited).toBe(0);
    } finally {
      await hang.close();
    }
  });
});
