import { mongo } from 'mongoose';
import { MongoDbDestination } from '@tapyard/destinations';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_MONGODB_URI, testEnv, uniqueEnvironment } from './support/env';
import { expectSecondDeliveryWritesNothing } from './support/destinations';
import { upload, waitForJob } from './support/ingest';
import { spawnApp } from './support/processes';

/** JSON and XML pipelines into a MongoDB-wire server (FerretDB here), documents as they come. */
describe('loads into MongoDB (real FerretDB)', () => {
  const env = uniqueEnvironment('mongo');
  const dbName = `tapyard_test_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  let api: TestApi;
  let worker: TestWorker;
  let client: mongo.MongoClient;

  const docPipeline = (name: string, format: 'json' | 'xml', extra: Record<string, unknown> = {}) => ({
    name,
    source: {
      fileAttributes: { format, ...extra },
      schemaProperties: { fields: [{ name: format === 'json' ? '_json' : '_xml', type: 'string' }] },
    },
    destination: { database: { dbName, schema: 'ignored', table: name, usePostgres: false } },
  });
  const docs = (collection: string) =>
    client.db(dbName).collection(collection).find({}).sort({ _id: 1 }).toArray();

  beforeAll(async () => {
    const flags = {
      TAPYARD_ENV: env,
      MONGODB_URI: TEST_MONGODB_URI,
      STATUS_PROGRESS_MS: '50',
      // The queue's workers take turns checking for stalled jobs, one check per interval whoever makes
      // it (BullMQ's stalled-check key, set for WORKER_LOCK_MS): at the default 30 s, a check this
      // worker made before the takeover case closed it held off that case's workers for up to 30 s.
      WORKER_LOCK_MS: '5000',
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    client = await new mongo.MongoClient(TEST_MONGODB_URI).connect();
  });
  afterAll(async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
    await worker.close();
    await api.close();
  });

  it('is reported up by health and listed as an available destination', async () => {
    const health = await api.http.get('/api/v1/health/services').expect(200);
    expect(health.body.mongodb).toEqual({ status: 'up' });
    const dest = await api.http.get('/api/v1/destinations/available').expect(200);
    expect(dest.body).toContain('mongodb');
  });

  it('loads a JSON array, NDJSON and XML records unnormalised, with MongoDBLoader events', async () => {
    await api.http.post('/api/v1/pipeline').send(docPipeline('orders', 'json')).expect(200);
    const arrayToken = await upload(
      api.http,
      'orders',
      JSON.stringify([
        { id: 1, customer: { name: 'Ada', tags: ['vip'] }, total: 12.5 },
        { id: 2, customer: { name: 'Bob', tags: [] }, total: null },
      ]),
      'orders.json',
    );
    const { rollup, events } = await waitForJob(api.http, arrayToken);
    expect(rollup.status).toBe('success');
    // Progress entries may come in between on a slow machine (STATUS_PROGRESS_MS is short here).
    const states = events.filter((e) => e.processName === 'MongoDBLoader').map((e) => e.state);
    expect(states[0]).toBe('begin');
    expect(states[states.length - 1]).toBe('end');
    expect(new Set(states.slice(1, -1))).toEqual(new Set(states.length > 2 ? ['processing'] : []));
    const ndjsonToken = await upload(
      api.http,
      'orders',
      '{"id":3,"nested":{"deep":{"x":1}}}\n{"id":4}\n',
      'more.ndjson',
    );
    expect((await waitForJob(api.http, ndjsonToken)).rollup.status).toBe('success');
    // Stored as they come, with the job that loaded each (pipelines created since load ids exist).
    const stored = await docs('orders');
    expect(stored).toEqual(
      [
        {
          _id: `${arrayToken}:0`,
          _tapyard_load_id: arrayToken,
          id: 1,
          customer: { name: 'Ada', tags: ['vip'] },
          total: 12.5,
        },
        {
          _id: `${arrayToken}:1`,
          _tapyard_load_id: arrayToken,
          id: 2,
          customer: { name: 'Bob', tags: [] },
          total: null,
        },
        { _id: `${ndjsonToken}:0`, _tapyard_load_id: ndjsonToken, id: 3, nested: { deep: { x: 1 } } },
        { _id: `${ndjsonToken}:1`, _tapyard_load_id: ndjsonToken, id: 4 },
      ].sort((a, b) => a._id.localeCompare(b._id)),
    );

    await api.http
      .post('/api/v1/pipeline')
      .send(docPipeline('items', 'xml', { xmlAttributes: { rowElement: 'item' } }))
      .expect(200);
    const xml =
      '<feed><item sku="A1"><name>Pen</name><price cur="EUR">1.50</price></item><item sku="B2"><name>Ink</name></item></feed>';
    const xmlToken = await upload(api.http, 'items', xml, 'feed.xml');
    expect((await waitForJob(api.http, xmlToken)).rollup.status).toBe('success');
    expect(await docs('items')).toEqual([
      {
        _id: `${xmlToken}:0`,
        _tapyard_load_id: xmlToken,
        '@sku': 'A1',
        name: 'Pen',
        price: { '@cur': 'EUR', '#text': '1.50' },
      },
      { _id: `${xmlToken}:1`, _tapyard_load_id: xmlToken, '@sku': 'B2', name: 'Ink' },
    ]);
  });

  it('keeps records the server refuses in <collection>_rejects with its reason; nothing is lost', async () => {
    await api.http.post('/api/v1/pipeline').send(docPipeline('odd', 'json')).expect(200);
    // FerretDB v1 refuses field names with '.' or a leading '$'; MongoDB 5+ stores them.
    const token = await upload(api.http, 'odd', '{"ok":1}\n{"a.b":2}\n{"$x":3}\n{"ok":4}\n', 'odd.ndjson');
    const { rollup } = await waitForJob(api.http, token);
    const loaded = await docs('odd');
    const rejects = await docs('odd_rejects');
    expect(loaded.length + rejects.length).toBe(4);
    expect(loaded.map((d) => d.ok).filter(Boolean)).toEqual([1, 4]);
    for (const r of rejects) expect(r).toMatchObject({ stage: 'MongoDBLoader', reason: expect.any(String) });
    expect(rollup.status).toBe(rejects.length > 0 ? 'warning' : 'success');
  });

  it('rejects a record whose key holds a NUL with a readable reason; the job ends instead of retrying', async () => {
    await api.http.post('/api/v1/pipeline').send(docPipeline('nul', 'json')).expect(200);
    const token = await upload(
      api.http,
      'nul',
      '{"ok":1}\n{"foo\\u0000bar":42}\n{"deep":{"x\\u0000":1}}\n',
      'nul.ndjson',
    );
    const { rollup, events } = await waitForJob(api.http, token, 60_000);
    expect(rollup.status).toBe('warning');
    expect((await docs('nul')).map((d) => d.ok)).toEqual([1]);
    const rejects = await docs('nul_rejects');
    expect(rejects.map((r) => r.reason)).toEqual([
      "field name 'foo\\u0000bar' holds a NUL character, which BSON cannot store",
      "field name 'x\\u0000' holds a NUL character, which BSON cannot store",
    ]);
    expect(events.every((e) => !e.description.includes('\u0000'))).toBe(true);
  });

  it('a malformed file takes back the documents its job already wrote', async () => {
    await api.http.post('/api/v1/pipeline').send(docPipeline('partial', 'json')).expect(200);
    const records = Array.from({ length: 12_000 }, (_, i) => JSON.stringify({ i })).join(',');
    const token = await upload(api.http, 'partial', `[${records},]`, 'partial.json');
    const { rollup } = await waitForJob(api.http, token, 60_000);
    expect(rollup.status).toBe('error');
    expect(rollup.jobs[0].lastError?.description).toMatch(/not well-formed at byte offset/);
    expect(await docs('partial')).toEqual([]);
  });

  it('a second delivery of a committed job writes nothing', async () => {
    const dest = api.app.get(MongoDbDestination);
    const target = {
      environment: env,
      pipeline: 'orders',
      destination: { database: { dbName, schema: 'x', table: 'again', usePostgres: false } },
      columns: [{ name: '_json', type: 'string' as const }],
      pipelineToken: `redelivered-${env}`,
    };
    await expectSecondDeliveryWritesNothing(dest, target, [['{"n":1}'], ['{"n":2}']]);
    expect(await docs('again')).toHaveLength(2);
  });

  it('deleteData drops the collection and its rejects', async () => {
    await api.http.delete('/api/v1/pipeline').query({ pipeline: 'odd', deleteData: 'true' }).expect(200);
    const names = (await client.db(dbName).listCollections().toArray()).map((c) => c.name);
    expect(names).not.toContain('odd');
    expect(names).not.toContain('odd_rejects');
    expect(names).toContain('orders');
  });

  it('a worker killed in the middle of a load leaves each record exactly once after another takes over', async () => {
    await api.http.post('/api/v1/pipeline').send(docPipeline('big', 'json')).expect(200);
    const records = 40_000;
    let ndjson = '';
    for (let i = 0; i < records; i++) ndjson += `{"i":${i},"label":"record ${i}"}\n`;
    const workerEnv = testEnv({
      TAPYARD_ENV: env,
      MONGODB_URI: TEST_MONGODB_URI,
      WORKER_LOCK_MS: '2000',
      STATUS_PROGRESS_MS: '10',
    });
    await worker.close(); // only the spawned workers take this job
    const first = spawnApp('worker', workerEnv);
    await first.waitFor(/Tapyard worker ready/);
    const token = await upload(api.http, 'big', ndjson, 'big.ndjson');
    // Kill once some documents are written (a progress entry), before the load ends.
    for (;;) {
      const events = (
        await api.http.get('/api/v1/pipeline/status').query({ pipelinetoken: token }).expect(200)
      ).body;
      if (
        events.some(
          (e: { processName: string; state: string }) =>
            e.processName === 'MongoDBLoader' && e.state === 'processing',
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 10));
    }
    first.child.kill('SIGKILL');
    await first.exited;
    const partial = await client.db(dbName).collection('big').countDocuments();
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(records);

    const second = spawnApp('worker', workerEnv);
    try {
      const { rollup } = await waitForJob(api.http, token, 120000);
      expect(rollup.status).toBe('success');
      const all = await client
        .db(dbName)
        .collection('big')
        .find({}, { projection: { i: 1 } })
        .toArray();
      expect(all).toHaveLength(records);
      expect(new Set(all.map((d) => d.i)).size).toBe(records);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
      worker = await startWorker({ TAPYARD_ENV: env, MONGODB_URI: TEST_MONGODB_URI });
    }
  }, 180000);
});
