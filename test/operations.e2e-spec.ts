import { Job, Queue, QueueEvents } from 'bullmq';
import { get } from 'node:http';
import { Client } from 'pg';
import { ShutdownState, queuePrefix } from '@tapyard/core';
import { MaintenanceJob, PingResult, QUEUES } from '@tapyard/queue';
import { TestApi, startApi } from './support/apps';
import {
  TEST_DATABASE_URL,
  TEST_OBJECT_STORE,
  TEST_REDIS_URL,
  testEnv,
  uniqueEnvironment,
} from './support/env';
import { csvPipeline, upload, waitForJob } from './support/ingest';
import { Relay, cuttableProxy } from './support/net';
import { Spawned, spawnApp } from './support/processes';
import { HeldPing } from './support/test-worker';
import { RestSink } from './support/rest-sink';
import { issueKey, newBootstrapKey } from './support/auth';

/** Polls until `holds` (bounded: a test that waits in vain fails, naming what it waited for). */
async function until(what: string, holds: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await holds()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`still waiting for ${what}`);
}

/**
 * GET on a worker's operations port, on a connection of its own: a pooled keep-alive connection of
 * an earlier worker that had the same ephemeral port would be reset.
 */
function probe(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** The value of one sample of a Prometheus exposition (labels in any order), or null when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | null {
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return null;
}

/** Every label value of an exposition. */
function labelValues(text: string): Set<string> {
  return new Set([...text.matchAll(/\w+="([^"]*)"/g)].map((m) => m[1]));
}

/** Issue 25 §3: probes, metrics and graceful shutdown of API replicas and workers on separate hosts. */
describe('operations', () => {
  describe('API probes', () => {
    it('/livez and /readyz need no key even with API keys on, and reveal nothing', async () => {
      const api = await startApi({
        USE_API_KEYS: 'true',
        TAPYARD_BOOTSTRAP_API_KEY: 'ops-bootstrap-key-0123456789abcdef',
      });
      try {
        await api.http.get('/api/v1/health/services').expect(401);
        const live = await api.http.get('/livez').expect(200);
        expect(live.body).toEqual({ status: 'ok' });
        const ready = await api.http.get('/readyz').expect(200);
        expect(ready.body).toEqual({ status: 'ok' });
        // Outside /api/v1 only.
        await api.http.get('/api/v1/readyz').expect(404);
      } finally {
        await api.close();
      }
    });

    describe('readiness', () => {
      let pgRelay: Relay;
      let redisRelay: Relay;
      let api: TestApi;
      const ready = async () => (await api.http.get('/readyz')).status;

      beforeAll(async () => {
        const pgUrl = new URL(TEST_DATABASE_URL);
        const redisUrl = new URL(TEST_REDIS_URL);
        pgRelay = await cuttableProxy(Number(pgUrl.port || 5432));
        redisRelay = await cuttableProxy(Number(redisUrl.port || 6379));
        pgUrl.hostname = '127.0.0.1';
        pgUrl.port = String(pgRelay.port);
        redisUrl.hostname = '127.0.0.1';
        redisUrl.port = String(redisRelay.port);
        api = await startApi({
          DATABASE_URL: pgUrl.toString(),
          REDIS_URL: redisUrl.toString(),
          HEALTH_TIMEOUT_MS: '500',
        });
      }, 60000);
      afterAll(async () => {
        pgRelay.restore();
        redisRelay.restore();
        await api.close();
        await pgRelay.close();
        await redisRelay.close();
      });

      it('is 503 while PostgreSQL is down, 200 once it is back', async () => {
        expect(await ready()).toBe(200);
        pgRelay.cut();
        const res = await api.http.get('/readyz').expect(503);
        expect(res.body).toEqual({ status: 'unavailable' });
        pgRelay.restore();
        await until('readiness after PostgreSQL came back', async () => (await ready()) === 200);
      });

      it('is 503 while Redis is down, 200 once it is back', async () => {
        expect(await ready()).toBe(200);
        redisRelay.cut();
        const res = await api.http.get('/readyz').expect(503);
        expect(res.body).toEqual({ status: 'unavailable' });
        redisRelay.restore();
        await until('readiness after Redis came back', async () => (await ready()) === 200);
      });

      it('is 503 once the API is shutting down, while liveness stays 200', async () => {
        expect(await ready()).toBe(200);
        api.app.get(ShutdownState).begin();
        expect((await api.http.get('/readyz').expect(503)).body).toEqual({ status: 'unavailable' });
        await api.http.get('/livez').expect(200);
      });
    });
  });

  describe('worker processes', () => {
    const env = uniqueEnvironment('ops');
    const table = `ops_${env.replace(/[^a-z0-9]/g, '_')}`;
    const rest = new RestSink();
    let api: TestApi;
    let pg: Client;
    let pings: Queue<HeldPing, PingResult>;
    let ingest: Queue;
    let events: QueueEvents;
    const workers: Spawned[] = [];

    /** A worker process; a `test-worker` holds pings for their `holdMs` and spins on TAPYARD_TEST_SPIN_ON. */
    const worker = (
      flags: Record<string, string> = {},
      app: 'worker' | 'test-worker' = 'worker',
    ): Spawned => {
      const w = spawnApp(
        app,
        testEnv({
          TAPYARD_ENV: env,
          ...TEST_OBJECT_STORE,
          REST_SINK_ALLOW: `127.0.0.1:${rest.port}`,
          ...flags,
        }),
      );
      workers.push(w);
      return w;
    };
    const csv = (n: number) =>
      `id,label\n${Array.from({ length: n }, (_, i) => `${i + 1},r${i + 1}`).join('\n')}\n`;
    /** Rows of a table, and how many distinct ids they hold. */
    const rows = async (t: string) =>
      (await pg.query(`SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM ingest_test."${t}"`))
        .rows[0] as { n: number; d: number };

    beforeAll(async () => {
      await rest.start();
      api = await startApi({ TAPYARD_ENV: env, ...TEST_OBJECT_STORE });
      pg = new Client({ connectionString: TEST_DATABASE_URL });
      await pg.connect();
      const opts = { connection: { url: TEST_REDIS_URL }, prefix: queuePrefix(env) };
      pings = new Queue(QUEUES.maintenance, opts);
      ingest = new Queue(QUEUES.ingest, opts);
      events = new QueueEvents(QUEUES.maintenance, opts);
      await events.waitUntilReady();
      const fields: [string, string][] = [
        ['id', 'int'],
        ['label', 'string'],
      ];
      await api.http
        .post('/api/v1/pipeline')
        .send(csvPipeline('opsmetered', table, fields))
        .expect(200);
      const both = csvPipeline('opshanded', `${table}_h`, fields);
      await api.http
        .post('/api/v1/pipeline')
        .send({
          ...both,
          destination: { ...both.destination, rest: { url: `http://127.0.0.1:${rest.port}/handed` } },
        })
        .expect(200);
    }, 60000);
    // A test that fails before stopping its workers must not leave them taking the next test's jobs (one
    // failure then failed every later test of the file).
    afterEach(async () => {
      const left = workers.splice(0);
      for (const w of left) if (w.child.exitCode === null) w.child.kill('SIGKILL');
      await Promise.all(left.map((w) => w.exited));
    });
    afterAll(async () => {
      await pings.obliterate({ force: true });
      await ingest.obliterate({ force: true });
      await pings.close();
      await ingest.close();
      await events.close();
      await pg.query(`DROP TABLE IF EXISTS ingest_test."${table}", ingest_test."${table}_h"`);
      await pg.end();
      await api.close();
      await rest.stop();
    });

    it('serves /livez, /readyz and /metrics whose figures move with real jobs, stalls and tap runs, with no token, name or file name in a label', async () => {
      const w = worker(
        {
          WORKER_CONCURRENCY: '1',
          SHUTDOWN_GRACE_SECONDS: '1',
          // Above a loaded machine's stage-thread start (a 40-row job was once stopped as stalled at 1 s).
          STAGE_STALL_MS: '4000',
          TAPYARD_TEST_SPIN_ON: '__ops_spin__',
          TAP_SCHEDULER_MS: '100',
        },
        'test-worker',
      );
      const port = await w.httpPort();
      await w.waitFor(/Tapyard worker ready/);
      expect(await probe(port, '/livez')).toEqual({ status: 200, body: '{"status":"ok"}' });
      expect(await probe(port, '/readyz')).toEqual({ status: 200, body: '{"status":"ok"}' });
      expect((await probe(port, '/anything')).status).toBe(404);

      const before = (await probe(port, '/metrics')).body;
      expect(sample(before, 'tapyard_rows_loaded_total', { destination: 'postgres' })).toBeNull();
      expect(
        sample(before, 'tapyard_queue_oldest_job_age_seconds', { queue: 'maintenance', environment: env }),
      ).toBe(0);

      const filename = `ops-private-name-${env}.csv`;
      const token = await upload(api.http, 'opsmetered', csv(40), filename);
      expect((await waitForJob(api.http, token)).rollup.status).toBe('success');
      // A value the DataQuality stage spins on (TAPYARD_TEST_SPIN_ON): its thread is stopped as stalled.
      const spun = await upload(api.http, 'opsmetered', 'id,label\n1,__ops_spin__\n', 'spin.csv');
      expect((await waitForJob(api.http, spun)).rollup.status).toBe('error');

      // The one maintenance slot held, a job from 90 s ago waits behind it: depth and age an autoscaler reads.
      const hold = await pings.add(MaintenanceJob.ping, { requestedAt: Date.now(), holdMs: 60_000 });
      await until('the holding job to run', async () => (await hold.getState()) === 'active');
      await pings.add(MaintenanceJob.ping, { requestedAt: Date.now() }, { timestamp: Date.now() - 90_000 });
      await pings.add(MaintenanceJob.ping, { requestedAt: Date.now() }, { delay: 600_000 });

      const after = (await probe(port, '/metrics')).body;
      expect(sample(after, 'tapyard_rows_loaded_total', { destination: 'postgres', environment: env })).toBe(
        40,
      );
      expect(sample(after, 'tapyard_jobs_total', { outcome: 'success' })).toBe(1);
      expect(sample(after, 'tapyard_jobs_total', { outcome: 'error' })).toBe(1);
      expect(sample(after, 'tapyard_stage_stalls_total', { stage: 'DataQuality' })).toBe(1);
      expect(sample(after, 'tapyard_job_stage_events_total', { stage: 'PostgresLoader', state: 'end' })).toBe(
        1,
      );
      expect(sample(after, 'tapyard_job_stage_events_total', { stage: 'JobRunner', state: 'end' })).toBe(1);
      const q = { environment: env, queue: 'maintenance' };
      expect(sample(after, 'tapyard_queue_jobs', { ...q, state: 'active' })).toBe(1);
      expect(sample(after, 'tapyard_queue_jobs', { ...q, state: 'waiting' })).toBe(1);
      expect(sample(after, 'tapyard_queue_jobs', { ...q, state: 'delayed' })).toBe(1);
      expect(sample(after, 'tapyard_queue_jobs', { ...q, state: 'failed' })).toBe(0);
      expect(sample(after, 'tapyard_queue_oldest_job_age_seconds', q)).toBeGreaterThanOrEqual(90);
      expect(
        sample(after, 'tapyard_queue_jobs', { environment: env, queue: 'ingest', state: 'waiting' }),
      ).toBe(0);
      expect(sample(after, 'tapyard_scheduler_lag_seconds_count', {})).toBe(0);
      expect(sample(after, 'tapyard_tap_runs_total', { trigger: 'schedule' })).toBeNull();

      // A yearly schedule whose fire time the worker finds 30 s overdue: one run, 30 s late.
      await api.http
        .post('/api/v1/tap')
        .send({
          name: 'opsyearly',
          script: 'def fetch():\n    return [{"id": 1000, "label": "tap"}]\n',
          targetPipeline: 'opsmetered',
          cronExpression: '0 0 0 1 1 ?',
          enabled: true,
        })
        .expect(200);
      await pg.query(
        `UPDATE tapyard.taps SET next_fire_at = now() - interval '30 seconds' WHERE environment = $1 AND name = $2`,
        [env, 'opsyearly'],
      );
      await until('the scheduled run to end', async () => {
        const runs = (await api.http.get('/api/v1/tap/runs').query({ name: 'opsyearly' }).expect(200))
          .body as { trigger: string; status: string }[];
        return runs.some((r) => r.trigger === 'schedule' && r.status !== 'running');
      });
      // The worker counts the run just after it records its end (CI saw the count missing once, in between).
      let fired = '';
      await until('the scheduled run to be counted', async () => {
        fired = (await probe(port, '/metrics')).body;
        return sample(fired, 'tapyard_tap_runs_total', { trigger: 'schedule' }) !== null;
      });
      expect(
        sample(fired, 'tapyard_tap_runs_total', { mode: 'run', trigger: 'schedule', outcome: 'success' }),
      ).toBe(1);
      expect(sample(fired, 'tapyard_scheduler_lag_seconds_count', {})).toBe(1);
      expect(sample(fired, 'tapyard_scheduler_lag_seconds_sum', {})).toBeGreaterThanOrEqual(30);

      const values = labelValues(fired);
      for (const secret of [token, spun, filename, 'opsmetered', 'opsyearly', table]) {
        expect(fired).not.toContain(secret);
        expect([...values].filter((v) => v.includes(secret))).toEqual([]);
      }

      await pings.obliterate({ force: true });
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
    }, 180000);

    it('on SIGTERM readiness turns 503 at once, the running job finishes within the grace, and the worker exits 0', async () => {
      const w = worker({ SHUTDOWN_GRACE_SECONDS: '60' }, 'test-worker');
      const port = await w.httpPort();
      await w.waitFor(/Tapyard worker ready/);
      const job: Job<HeldPing, PingResult> = await pings.add(MaintenanceJob.ping, {
        requestedAt: Date.now(),
        // Long enough that a loaded machine's probes all land before the job ends and the worker exits
        // (a probe in flight while it exits is reset).
        holdMs: 12000,
      });
      await until('the job to run', async () => (await job.getState()) === 'active');
      w.child.kill('SIGTERM');
      await until('readiness to say draining', async () => {
        if (w.child.exitCode !== null) throw new Error('the worker exited before its readiness was seen');
        return (await probe(port, '/readyz')).status === 503;
      });
      expect((await probe(port, '/readyz')).body).toBe('{"status":"unavailable"}');
      expect((await probe(port, '/livez')).status).toBe(200);
      const result = await job.waitUntilFinished(events, 60000);
      expect(result.workerPid).toBe(w.child.pid);
      expect(await w.exited).toBe(0);
      expect(w.output()).not.toContain('handed back');
    }, 120000);

    it('a job still running when the grace ends is handed back, taken at once by another worker without spending a delivery, and loaded exactly once', async () => {
      // A lock far longer than this test: only a hand-back lets the second worker take the job in time.
      const flags = { SHUTDOWN_GRACE_SECONDS: '2', WORKER_LOCK_MS: '600000' };
      rest.hang('/handed');
      const first = worker(flags);
      await first.waitFor(/Tapyard worker ready/);
      const token = await upload(api.http, 'opshanded', csv(25), 'handed.csv');
      await until('the REST delivery to hang', () => rest.hanging === 1);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      expect(first.output()).toContain('running jobs handed back to their queue');

      const job = await ingest.getJob(`${env}.${token}`);
      expect(job).toBeDefined();
      expect(await job!.getState()).toBe('waiting');
      expect(job!.attemptsMade).toBe(0);
      expect(
        (await api.http.get('/api/v1/pipeline/status').query({ pipelinetoken: token, withrollup: 'true' }))
          .body.rollup.allDone,
      ).toBe(false);

      rest.release('/handed');
      const second = worker(flags);
      const { rollup } = await waitForJob(api.http, token, 60000);
      expect(rollup.status).toBe('success');
      expect(await rows(`${table}_h`)).toEqual({ n: 25, d: 25 });
      expect(rest.rows('/handed')).toHaveLength(25);
      const ledger = await pg.query(`SELECT rows_loaded FROM tapyard_meta.loads WHERE pipeline_token = $1`, [
        token,
      ]);
      expect(ledger.rows).toEqual([{ rows_loaded: '25' }]);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    }, 180000);

    it('a scheduled tap run still running when the grace ends is stopped, says why, and its fire is run at once by another worker', async () => {
      const flags = { SHUTDOWN_GRACE_SECONDS: '1', TAP_SCHEDULER_MS: '100' };
      await api.http
        .post('/api/v1/tap')
        .send({
          name: 'opsslow',
          script:
            'import time\n\ndef fetch():\n    time.sleep(600)\n    return [{"id": 1, "label": "slow"}]\n',
          targetPipeline: 'opsmetered',
          cronExpression: '0 0 0 1 1 ?',
          enabled: true,
        })
        .expect(200);
      const runs = async () =>
        (await api.http.get('/api/v1/tap/runs').query({ name: 'opsslow' }).expect(200)).body as {
          runId: string;
          trigger: string;
          status: string;
          error: string | null;
        }[];
      const fireAt = (
        await pg.query<{ at: Date }>(
          `UPDATE tapyard.taps SET next_fire_at = date_trunc('milliseconds', now() - interval '5 seconds')
           WHERE environment = $1 AND name = 'opsslow' RETURNING next_fire_at AS at`,
          [env],
        )
      ).rows[0].at;
      const first = worker(flags);
      await until('the scheduled run to start', async () => (await runs()).length === 1);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      expect(first.output()).toContain('"tapRunsHandedBack":1');
      const [stopped] = await runs();
      expect(stopped).toMatchObject({ trigger: 'schedule', status: 'error' });
      expect(stopped.error).toContain('its fire handed back to another worker');
      // The worker's own line says what the history says (it printed `success` with the error beside it).
      const finished = first
        .output()
        .split('\n')
        .find((l) => l.includes('scheduled tap run finished'));
      expect(finished).toContain('"status":"error"');
      const given = await pg.query<{ at: Date }>(
        `SELECT next_fire_at AS at FROM tapyard.taps WHERE environment = $1 AND name = 'opsslow'`,
        [env],
      );
      expect(given.rows[0].at.getTime()).toBe(fireAt.getTime());

      // Without the hand-back the fire would wait for next year's; another worker takes it at once.
      const second = worker(flags);
      await until('the fire to run again', async () => (await runs()).length === 2);
      const again = (await runs()).find((r) => r.runId !== stopped.runId);
      expect(again).toMatchObject({ trigger: 'schedule', status: 'running' });
      second.child.kill('SIGKILL');
      await second.exited;
    }, 180000);
  });
  it("multi-tenant: a tenant's job still running when the grace ends is handed back to the tenant's queue and loaded once by another worker", async () => {
    const operator = uniqueEnvironment('opsmt');
    const tenant = uniqueEnvironment('opsta');
    const boot = newBootstrapKey();
    const sink = await new RestSink().start();
    const flags = {
      TAPYARD_ENV: operator,
      MULTI_TENANT: 'true',
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      ...TEST_OBJECT_STORE,
    };
    const api = await startApi(flags);
    const pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    const queue = new Queue(QUEUES.ingest, {
      connection: { url: TEST_REDIS_URL },
      prefix: queuePrefix(tenant),
    });
    const spawned: Spawned[] = [];
    const worker = () => {
      const w = spawnApp(
        'worker',
        testEnv({
          ...flags,
          REST_SINK_ALLOW: `127.0.0.1:${sink.port}`,
          SHUTDOWN_GRACE_SECONDS: '2',
          WORKER_LOCK_MS: '600000',
        }),
      );
      spawned.push(w);
      return w;
    };
    try {
      const key = await issueKey(api.http, boot, 'mt-admin', { template: 'full-access' }, { tenant });
      await api.http
        .post('/api/v1/pipeline')
        .set('x-api-key', key)
        .send(
          csvPipeline('mt', 'mt_rows', [['id', 'int']], {
            destination: {
              database: { table: 'mt_rows' },
              rest: { url: `http://127.0.0.1:${sink.port}/mt` },
            },
          }),
        )
        .expect(200);
      sink.hang('/mt');
      const first = worker();
      await first.waitFor(/consuming tenant queues/);
      const res = await api.http
        .post('/api/v1/pipeline/upload')
        .set('x-api-key', key)
        .field('pipeline', 'mt')
        .attach('file', Buffer.from('id\n1\n2\n3\n'), 'mt.csv')
        .expect(200);
      const token = res.text;
      await until('the REST delivery to hang', () => sink.hanging === 1);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      const job = await queue.getJob(`${tenant}.${token}`);
      expect(await job?.getState()).toBe('waiting');
      expect(job?.attemptsMade).toBe(0);

      sink.release('/mt');
      worker();
      await until('the job to succeed', async () => {
        const body = (
          await api.http
            .get('/api/v1/pipeline/status')
            .query({ pipelinetoken: token, withrollup: 'true' })
            .set('x-api-key', key)
            .expect(200)
        ).body as { rollup: { allDone: boolean; status: string } };
        return body.rollup.allDone && body.rollup.status === 'success';
      });
      const rows = await pg.query(`SELECT id FROM "t_${tenant}".mt_rows ORDER BY id`);
      expect(rows.rows.map((r: { id: number }) => r.id)).toEqual([1, 2, 3]);
      expect(sink.rows('/mt')).toHaveLength(3);
    } finally {
      for (const w of spawned) if (w.child.exitCode === null) w.child.kill('SIGTERM');
      await Promise.all(spawned.map((w) => w.exited));
      await queue.obliterate({ force: true });
      await queue.close();
      await pg.query(`DROP SCHEMA IF EXISTS "t_${tenant}" CASCADE`);
      await pg.end();
      await api.close();
      await sink.stop();
    }
  }, 180000);
});
