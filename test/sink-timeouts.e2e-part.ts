import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_DATABASE_URL, uniqueEnvironment } from './support/env';
import { RollupAnswer, upload, waitForJob } from './support/ingest';
import { blackhole } from './support/net';
import { RestSink } from './support/rest-sink';
import { SilentStompBroker } from './support/silent-stomp';

/**
 * Sinks whose peer accepts the connection and then never answers (a REST endpoint, a Kafka broker, a
 * STOMP broker, all real listeners on loopback): each wait is bounded by SINK_REQUEST_TIMEOUT_MS, a
 * job's delivery by SINK_LOAD_TIMEOUT_MS, and jobs stuck on sinks never take every worker slot
 * (SINK_CONCURRENCY), so other pipelines keep loading.
 */
describe('sinks that never answer', () => {
  const env = uniqueEnvironment('sinkwait');
  const schema = `sw_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const rest = new RestSink();
  const stomp = new SilentStompBroker();
  let kafka: { port: number; close(): Promise<void> };
  let api: TestApi;
  let pg: Client;
  const csv = (n: number) => `id\n${Array.from({ length: n }, (_, i) => i + 1).join('\n')}\n`;
  const fields = [{ name: 'id', type: 'int' }];

  const pipeline = (name: string, destination: Record<string, unknown>) =>
    api.http
      .post('/api/v1/pipeline')
      .send({
        name,
        source: { fileAttributes: { format: 'csv' }, schemaProperties: { fields } },
        destination,
      })
      .expect(200);

  const worker = (flags: Record<string, string>): Promise<TestWorker> =>
    startWorker({
      TAPYARD_ENV: env,
      REST_SINK_ALLOW: `127.0.0.1:${rest.port}`,
      TAP_EGRESS_ALLOW: `127.0.0.1:${stomp.port},127.0.0.1:${kafka.port}`,
      ...flags,
    });

  const status = async (token: string): Promise<RollupAnswer> =>
    (
      await api.http
        .get('/api/v1/pipeline/status')
        .query({ pipelinetoken: token, withrollup: 'true' })
        .expect(200)
    ).body as RollupAnswer;

  /** Rows in the other pipeline's table (none before its first load created it). */
  const loadedIntoOther = (): Promise<number> =>
    pg.query(`SELECT count(*)::int AS n FROM "${schema}".other`).then(
      (r) => (r.rows[0] as { n: number }).n,
      () => 0,
    );

  /** Polls until `holds` (bounded: a test that waits in vain fails, naming what it waited for). */
  async function until(what: string, holds: () => boolean | Promise<boolean>): Promise<void> {
    for (let i = 0; i < 600; i++) {
      if (await holds()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`still waiting for ${what}`);
  }

  beforeAll(async () => {
    await rest.start();
    await stomp.start();
    kafka = await blackhole();
    // One delivery per job: a timeout is the job's end (jobs are retried as the API queued them).
    api = await startApi({ TAPYARD_ENV: env, LOAD_RETRY_ATTEMPTS: '1' });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await pg.query(`CREATE SCHEMA "${schema}"`);
    await api.http
      .put('/api/v1/secrets/silent-kafka')
      .send({ brokers: `127.0.0.1:${kafka.port}` })
      .expect(200);
    await api.http
      .put('/api/v1/secrets/silent-amq')
      .send({ url: `stomp://127.0.0.1:${stomp.port}`, username: 'u', password: 'p' })
      .expect(200);
    rest.hang('/hang');
    await pipeline('hang', { rest: { url: `http://127.0.0.1:${rest.port}/hang` } });
    await pipeline('other', { database: { schema, table: 'other' } });
    await pipeline('kafka', { kafka: { secretName: 'silent-kafka', topic: 'slow' } });
    await pipeline('amq', { activemq: { secretName: 'silent-amq', destination: '/queue/slow' } });
  }, 60000);
  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pg.end();
    await api.close();
    await rest.stop();
    await stomp.stop();
    await kafka.close();
  });

  describe('each answer waits SINK_REQUEST_TIMEOUT_MS at most', () => {
    let w: TestWorker;
    beforeAll(async () => {
      // Not lower: on a loaded machine an ActiveMQ session to the silent broker took over 300 ms to open, so
      // the probe, not the receipts, timed out.
      w = await worker({ SINK_REQUEST_TIMEOUT_MS: '900' });
    });
    afterAll(async () => {
      rest.release('/hang');
      await w.close();
      rest.hang('/hang');
    });

    it('REST: a POST never answered is given up after the timeout, each attempt, and the job ends error naming both', async () => {
      const before = rest.requests.filter((r) => r.path === '/hang' && r.method === 'POST').length;
      const token = await upload(api.http, 'hang', csv(3), 'hang.csv');
      const { rollup } = await waitForJob(api.http, token, 60000);
      expect(rollup.status).toBe('error');
      expect(rollup.jobs[0].lastError?.processName).toBe('RestEndpointRunner');
      expect(rollup.jobs[0].lastError?.description).toMatch(
        /^rest sink \(POST http:\/\/127\.0\.0\.1:\d+\/hang\): no answer to POST within 900 ms \(SINK_REQUEST_TIMEOUT_MS\) \(after 4 attempts\)$/,
      );
      expect(rest.requests.filter((r) => r.path === '/hang' && r.method === 'POST').length - before).toBe(4);
      // Each request given up was closed, not left open behind the job.
      await until('the endpoint to see every request closed', () => rest.hanging === 0);
    });

    it('Kafka: a broker that accepts the connection and stays silent fails the job after the timeout', async () => {
      const token = await upload(api.http, 'kafka', csv(3), 'kafka.csv');
      const { rollup } = await waitForJob(api.http, token, 60000);
      expect(rollup.status).toBe('error');
      expect(rollup.jobs[0].lastError?.processName).toBe('KafkaLoader');
      expect(rollup.jobs[0].lastError?.description).toMatch(
        /^kafka sink \(Kafka topic slow\): .*within 900 ms \(SINK_REQUEST_TIMEOUT_MS\)$/,
      );
    });

    it('ActiveMQ: a broker that takes the messages and sends no receipt (nor one for DISCONNECT) fails the job after the timeout and is disconnected', async () => {
      const sends = stomp.frames.SEND ?? 0;
      const token = await upload(api.http, 'amq', csv(3), 'amq.csv');
      const { rollup } = await waitForJob(api.http, token, 60000);
      expect(rollup.status).toBe('error');
      expect(rollup.jobs[0].lastError?.processName).toBe('ActiveMQLoader');
      expect(rollup.jobs[0].lastError?.description).toBe(
        'activemq sink (ActiveMQ /queue/slow): no answer to the receipts of its messages within 900 ms (SINK_REQUEST_TIMEOUT_MS)',
      );
      expect((stomp.frames.SEND ?? 0) - sends).toBe(3);
      await until('the sink to drop its connections to the silent broker', () => stomp.connections === 0);
    });
  });

  it('a delivery past SINK_LOAD_TIMEOUT_MS ends error, its request is aborted and its worker slot serves the next job', async () => {
    // One slot, and a request timeout far beyond the test: only the job's deadline can end the wait.
    const w = await worker({
      WORKER_CONCURRENCY: '1',
      SINK_REQUEST_TIMEOUT_MS: '600000',
      SINK_LOAD_TIMEOUT_MS: '1500',
    });
    try {
      const token = await upload(api.http, 'hang', csv(3), 'hang.csv');
      const { rollup } = await waitForJob(api.http, token, 60000);
      expect(rollup.status).toBe('error');
      expect(rollup.jobs[0].lastError).toEqual({
        processName: 'RestEndpointRunner',
        description: `rest sink (POST http://127.0.0.1:${rest.port}/hang): the delivery did not finish within 1500 ms (SINK_LOAD_TIMEOUT_MS)`,
      });
      await until('the endpoint to see the request closed', () => rest.hanging === 0);
      const next = await upload(api.http, 'other', csv(4), 'other.csv');
      expect((await waitForJob(api.http, next, 60000)).rollup.status).toBe('success');
    } finally {
      rest.release('/hang');
      await w.close();
      rest.hang('/hang');
    }
  });

  it('while WORKER_CONCURRENCY jobs wait on a silent endpoint, an upload to another pipeline loads; the waiting jobs deliver once it answers', async () => {
    const w = await worker({
      WORKER_CONCURRENCY: '2',
      SINK_REQUEST_TIMEOUT_MS: '600000',
      SINK_LOAD_TIMEOUT_MS: '600000',
    });
    // The jobs are queued with one delivery each (LOAD_RETRY_ATTEMPTS=1): waiting for a sink place
    // must not spend it.
    try {
      const rowsBefore = rest.rows('/hang').length;
      const loadedBefore = await loadedIntoOther();
      const stuck = [
        await upload(api.http, 'hang', csv(3), 'stuck-1.csv'),
        await upload(api.http, 'hang', csv(3), 'stuck-2.csv'),
      ];
      await until('both jobs taken by the worker, one request held by the endpoint', async () => {
        const taken = await Promise.all(
          stuck.map(async (t) => (await status(t)).events.some((e) => e.processName === 'JobRunner')),
        );
        return rest.hanging >= 1 && taken.every(Boolean);
      });
      const other = await upload(api.http, 'other', csv(5), 'other.csv');
      expect((await waitForJob(api.http, other, 60000)).rollup.status).toBe('success');
      expect(await loadedIntoOther()).toBe(loadedBefore + 5);
      // Meanwhile the sink's jobs waited: one on the endpoint, holding the sink's one place
      // (SINK_CONCURRENCY defaults to one below the worker's slots), the other back in the queue
      // rather than in a slot.
      expect(rest.hanging).toBe(1);
      const waiting = await Promise.all(stuck.map(status));
      for (const s of waiting) expect(s.rollup.allDone).toBe(false);
      expect(
        waiting
          .flatMap((s) => s.events)
          .some((e) =>
            /delivering to sinks \(SINK_CONCURRENCY\); this one waits in the queue/.test(e.description),
          ),
      ).toBe(true);

      rest.release('/hang');
      for (const token of stuck)
        expect((await waitForJob(api.http, token, 60000)).rollup.status).toBe('success');
      expect(rest.rows('/hang').length - rowsBefore).toBe(6);
    } finally {
      rest.release('/hang');
      await w.close();
      rest.hang('/hang');
    }
  });
});
