import { mongo } from 'mongoose';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_MONGODB_URI, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { waitForPublisher } from './support/ingest';

/**
 * Hostile and broken scripts through the API, with small limits: each ends with a clear error and
 * the service keeps serving. (libs/sandbox specs cover each limit in depth.)
 */
describe('tap limits, English cron and document-database targets', () => {
  const env = uniqueEnvironment('taplim');
  const dbName = `tapyard_test_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  let api: TestApi;
  let worker: TestWorker;
  let client: mongo.MongoClient;

  beforeAll(async () => {
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      MONGODB_URI: TEST_MONGODB_URI,
      TAP_TIMEOUT_MS: '3000',
      TAP_CPU_SECONDS: '20',
      TAP_MEMORY_LIMIT: '256mb',
      TAP_MAX_PROCESSES: '16',
      TAP_LOG_LIMIT: '64kb',
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    client = await new mongo.MongoClient(TEST_MONGODB_URI).connect();
  }, 60000);
  afterAll(async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
    await worker.close();
    await api.close();
  });

  const test = (script: string) =>
    api.http.post('/api/v1/tap/test').send({ name: 'hostile', script }).expect(200);

  it('stops an infinite loop at the wall-clock limit', async () => {
    const started = Date.now();
    const res = await test('def fetch():\n    while True:\n        pass\n');
    expect(res.body.error).toMatch(/longer than 3 s|timed out|stopped/);
    expect(Date.now() - started).toBeLessThan(10000);
  }, 20000);

  it('refuses a 10 GB allocation with a memory error', async () => {
    const res = await test('def fetch():\n    x = bytearray(10 * 1024 ** 3)\n    return [{"n": len(x)}]\n');
    expect(res.body.error).toMatch(/memory/i);
    expect(res.body.recordCount).toBe(0);
  });

  it('contains a fork bomb', async () => {
    const res = await test('import os\ndef fetch():\n    while True:\n        os.fork()\n');
    expect(res.body.error).toMatch(/process|fork|Resource temporarily unavailable|BlockingIOError/i);
  }, 20000);

  it('stops a script printing 1 GB, keeping bounded logs', async () => {
    const res = await test(
      'import sys\ndef fetch():\n    line = "x" * 1023 + "\\n"\n    for _ in range(1024 * 1024):\n        sys.stdout.write(line)\n    return []\n',
    );
    expect(res.body.error).toMatch(/output|log/i);
    expect(res.body.logs.length).toBeLessThan(80 * 1024);
  }, 20000);

  it('reports a crash (segfault) and keeps serving', async () => {
    const res = await test('import ctypes\ndef fetch():\n    ctypes.string_at(0)\n    return []\n');
    expect(res.body.error).toMatch(/crash|signal|SIGSEGV/i);
    const ok = await test('def fetch():\n    return [{"a": 1}]\n');
    expect(ok.body).toMatchObject({ error: null, recordCount: 1 });
  });

  it('turns plain English into Quartz cron with an explanation and the next 5 fire times', async () => {
    const res = await api.http
      .post('/api/v1/tap/cron')
      .send({ description: 'every weekday at 7am', timezone: 'UTC' })
      .expect(200);
    expect(res.body.cronExpression).toBe('0 0 7 ? * MON-FRI');
    expect(res.body.explanation).toMatch(/07:00/);
    expect(res.body.nextRuns).toHaveLength(5);
    for (const iso of res.body.nextRuns as string[]) {
      const d = new Date(iso);
      expect(d.getUTCHours()).toBe(7);
      expect([1, 2, 3, 4, 5]).toContain(d.getUTCDay());
      expect(d.getTime()).toBeGreaterThan(Date.now());
    }
    const last = await api.http
      .post('/api/v1/tap/cron')
      .send({ description: 'last day of the month at 23:00' })
      .expect(200);
    expect(last.body.cronExpression).toBe('0 0 23 L * ?');
    const berlin = await api.http
      .post('/api/v1/tap/cron')
      .send({ description: 'every day at 9am', timezone: 'Europe/Berlin' })
      .expect(200);
    expect(new Date(berlin.body.nextRuns[0]).getUTCHours()).toBeLessThan(9);
    const unknown = await api.http
      .post('/api/v1/tap/cron')
      .send({ description: 'whenever the moon is full' })
      .expect(422);
    expect(unknown.body.message).toMatch(/not a schedule/);
    await api.http
      .post('/api/v1/tap/cron')
      .send({ description: 'daily', timezone: 'Mars/Olympus' })
      .expect(400);
    await api.http.post('/api/v1/tap/cron').send({}).expect(400);
  });

  it('feeds a JSON pipeline in the document database with records as they are (not normalised)', async () => {
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'events',
        source: {
          fileAttributes: { format: 'json' },
          schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
        },
        destination: { database: { dbName, schema: 'ignored', table: 'events', usePostgres: false } },
      })
      .expect(200);
    const script =
      'def fetch():\n    for i in range(3):\n        yield {"Event ID": i, "payload": {"Nested Key": [i, i + 1]}}\n';
    await api.http
      .post('/api/v1/tap')
      .send({ name: 'events_tap', script, targetPipeline: 'events' })
      .expect(200);
    const t = await api.http.post('/api/v1/tap/run').send({ name: 'events_tap', mode: 'test' }).expect(200);
    expect(t.body).toMatchObject({ dataType: 'json', columns: ['Event ID', 'payload'] });
    expect(t.body.records[1]).toEqual({ 'Event ID': 1, payload: { 'Nested Key': [1, 2] } });
    const run = await api.http.post('/api/v1/tap/run').send({ name: 'events_tap', mode: 'run' }).expect(200);
    expect(run.body).toMatchObject({ persisted: true, recordCount: 3 });
    const { rollup } = await waitForPublisher(api.http, run.body.publisherToken);
    expect(rollup.status).toBe('success');
    const docs = await client.db(dbName).collection('events').find({}).sort({ _id: 1 }).toArray();
    expect(docs.map((d) => ({ id: d['Event ID'], payload: d.payload }))).toEqual([
      { id: 0, payload: { 'Nested Key': [0, 1] } },
      { id: 1, payload: { 'Nested Key': [1, 2] } },
      { id: 2, payload: { 'Nested Key': [2, 3] } },
    ]);
  }, 60000);
});
