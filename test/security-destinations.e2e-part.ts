import { randomBytes } from 'node:crypto';
import { mongo } from 'mongoose';
import { Client } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_MONGODB_URI, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { RollupAnswer, csvPipeline } from './support/ingest';
import { TestMinio } from './support/minio';

/**
 * Security issue, section 3: pipelines may load only inside the caller's confinement (never into the
 * platform's own places; a tenant only into its own), `deleteData=true` drops only what the pipeline
 * created, a failed delete can be repeated, and rejects tables never collide with data tables.
 * API keys and multi-tenant mode are on, against the real peers.
 */
describe('destination confinement and deleteData ownership', () => {
  const operator = uniqueEnvironment('op');
  const tenantA = uniqueEnvironment('ta');
  const tenantB = uniqueEnvironment('tb');
  const suffix = randomBytes(4).toString('hex');
  const boot = newBootstrapKey();
  const flags = {
    TAPYARD_ENV: operator,
    MULTI_TENANT: 'true',
    USE_API_KEYS: 'true',
    TAPYARD_BOOTSTRAP_API_KEY: boot,
    MONGODB_URI: TEST_MONGODB_URI,
    ...TEST_OBJECT_STORE,
  };
  const operatorMongoDb = `h3_${operator.replace(/[^a-z0-9]/g, '_')}`;
  const victim = `h3_victim_${suffix}`;
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  let mongoClient: mongo.MongoClient;
  let minio: TestMinio;
  let keyA: string;
  let keyB: string;

  const as = (key: string) => ({
    get: (path: string) => api.http.get(`/api/v1${path}`).set('x-api-key', key),
    post: (path: string) => api.http.post(`/api/v1${path}`).set('x-api-key', key),
    delete: (path: string) => api.http.delete(`/api/v1${path}`).set('x-api-key', key),
  });
  const op = () => as(boot);

  async function load(key: string, pipeline: string, content: string, filename = 'data.csv') {
    const res = await as(key)
      .post('/pipeline/upload')
      .field('pipeline', pipeline)
      .attach('file', Buffer.from(content), filename)
      .expect(200);
    const deadline = Date.now() + 30000;
    for (;;) {
      const r = await as(key)
        .get('/pipeline/status')
        .query({ pipelinetoken: res.text, withrollup: 'true' })
        .expect(200);
      const body = r.body as RollupAnswer;
      if (body.rollup.allDone) return { token: res.text, job: body.rollup.jobs[0] };
      if (Date.now() > deadline) throw new Error(`job not done: ${JSON.stringify(body.rollup)}`);
      await new Promise((done) => setTimeout(done, 100));
    }
  }
  const regclass = async (name: string) =>
    (await pg.query(`SELECT to_regclass($1)::text AS t`, [name])).rows[0].t as string | null;
  const quoted = (schema: string, table: string) => `"${schema}"."${table}"`;
  const jsonPipeline = (name: string, database: Record<string, unknown>) => ({
    name,
    source: {
      fileAttributes: { format: 'json' },
      schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
    },
    destination: { database: { usePostgres: false, ...database } },
  });

  beforeAll(async () => {
    api = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    // Shared with other suites, which create it on their first load: on a fresh database this one may run first.
    await pg.query('CREATE SCHEMA IF NOT EXISTS ingest_test');
    mongoClient = await new mongo.MongoClient(TEST_MONGODB_URI).connect();
    minio = new TestMinio();
    keyA = await issueKey(api.http, boot, 'a-admin', { template: 'full-access' }, { tenant: tenantA });
    keyB = await issueKey(api.http, boot, 'b-admin', { template: 'full-access' }, { tenant: tenantB });
  });

  afterAll(async () => {
    for (const schema of [`t_${tenantA}`, `t_${tenantB}`]) {
      await pg.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    }
    await pg
      .query(`SELECT tablename FROM pg_tables WHERE schemaname = 'ingest_test' AND tablename LIKE $1`, [
        `h3%${suffix}%`,
      ])
      .then(async ({ rows }) => {
        for (const r of rows as { tablename: string }[])
          await pg.query(`DROP TABLE IF EXISTS ingest_test."${r.tablename}"`);
      })
      .catch(() => undefined);
    for (const t of [victim, `${victim}_rejects`, `h3_stored_${suffix}`, `h3_stored_${suffix}_rejects`]) {
      await pg.query(`DROP TABLE IF EXISTS tapyard_meta."${t}"`).catch(() => undefined);
    }
    for (const db of [tenantA, tenantB, operatorMongoDb]) {
      await mongoClient
        .db(db)
        .dropDatabase()
        .catch(() => undefined);
    }
    await mongoClient.close();
    await pg.end();
    await worker.close();
    await api.close();
  });

  describe("the platform's own places are never a destination", () => {
    it.each([
      [
        'tapyard',
        'users',
        /PostgreSQL table tapyard_test\.tapyard\.users is not allowed: schema 'tapyard' belongs to the platform/,
      ],
      [
        'tapyard_meta',
        'loads',
        /tapyard_meta\.loads is not allowed: schema 'tapyard_meta' belongs to the platform/,
      ],
      ['pg_catalog', 'pg_class', /schema 'pg_catalog' belongs to the platform/],
      ['information_schema', 'tables', /schema 'information_schema' belongs to the platform/],
    ])('PostgreSQL schema %s is 400 naming it', async (schema, table, message) => {
      const res = await op()
        .post('/pipeline')
        .send(
          csvPipeline(`p_${schema}`, table, [['id', 'int']], {
            destination: { database: { dbName: 'tapyard_test', schema, table, usePostgres: true } },
          }),
        )
        .expect(400);
      expect(res.body.message).toMatch(message);
    });

    it.each([
      [
        { dbName: 'admin', table: 'x' },
        /MongoDB collection admin\.x is not allowed: database 'admin' is reserved/,
      ],
      [{ dbName: 'local', table: 'x' }, /database 'local' is reserved/],
      [{ dbName: 'tapyard_internal', table: 'x' }, /database 'tapyard_internal' is reserved/],
      [{ dbName: operatorMongoDb, table: '_tapyard_loads' }, /collection '_tapyard_loads' is reserved/],
    ])('MongoDB %j is 400 naming it', async (database, message) => {
      const res = await op().post('/pipeline').send(jsonPipeline('m_reserved', database)).expect(400);
      expect(res.body.message).toMatch(message);
    });

    it.each([`${operator}-config`, `${operator}-taps`, `${operator}-raw`, `${tenantA}-output`])(
      'bucket %s (platform objects, another environment) is 400 naming it',
      async (bucket) => {
        const res = await op()
          .post('/pipeline')
          .send({
            ...csvPipeline('files', 'x', [['id', 'int']]),
            destination: { objectStore: { bucket, prefix: 'tap-scripts' } },
          })
          .expect(400);
        expect(res.body.message).toContain(`bucket '${bucket}' is not allowed`);
      },
    );

    it('a pipeline stored before the rule existed ends error naming why, and loads nothing', async () => {
      const table = `h3_stored_${suffix}`;
      await op()
        .post('/pipeline')
        .send(csvPipeline('stored', table, [['id', 'int']]))
        .expect(200);
      // As an older release would have stored it: into the platform's ledger schema.
      await pg.query(
        `UPDATE tapyard.pipelines SET definition = jsonb_set(definition, '{destination,database,schema}', '"tapyard_meta"')
          WHERE environment = $1 AND name = 'stored'`,
        [operator],
      );
      const { job } = await load(boot, 'stored', 'id\n1\n');
      expect(job.status).toBe('error');
      expect(job.lastError).toEqual({
        processName: 'JobRunner',
        description: `destination PostgreSQL table tapyard_test.tapyard_meta.${table} is not allowed: schema 'tapyard_meta' belongs to the platform`,
      });
      expect(await regclass(quoted('tapyard_meta', table))).toBeNull();
    });

    it('deleteData of such a pipeline leaves the platform table it points at in place', async () => {
      await pg.query(`CREATE TABLE tapyard_meta."${victim}" (id integer)`);
      await op()
        .post('/pipeline')
        .send(csvPipeline('pointer', victim, [['id', 'int']]))
        .expect(200);
      await pg.query(
        `UPDATE tapyard.pipelines SET definition = jsonb_set(definition, '{destination,database,schema}', '"tapyard_meta"')
          WHERE environment = $1 AND name = 'pointer'`,
        [operator],
      );
      const res = await op()
        .delete('/pipeline')
        .query({ pipeline: 'pointer', deleteData: 'true' })
        .expect(200);
      expect(res.body).toMatchObject({ status: 'ok', pipeline: 'pointer', dataDeleted: true, dropped: [] });
      expect(res.body.skipped).toContainEqual({
        object: `PostgreSQL table tapyard_test.tapyard_meta.${victim}`,
        reason: 'this pipeline did not create it: left in place',
      });
      expect(await regclass(quoted('tapyard_meta', victim))).not.toBeNull();
    });
  });

  describe('a tenant loads only into its own schema, MongoDB database and bucket', () => {
    it('defaults to its own places and loads there', async () => {
      await as(keyA)
        .post('/pipeline')
        .send({
          ...csvPipeline('orders', 'orders', [['id', 'int']]),
          destination: { database: { table: 'orders' } },
        })
        .expect(200);
      const saved = await as(keyA).get('/pipeline').query({ pipeline: 'orders' }).expect(200);
      expect(saved.body.destination.database).toEqual({
        dbName: 'tapyard_test',
        schema: `t_${tenantA}`,
        table: 'orders',
        usePostgres: true,
      });
      const { job } = await load(keyA, 'orders', 'id\n1\n2\n');
      expect(job.status).toBe('success');
      const rows = await pg.query(`SELECT id FROM ${quoted(`t_${tenantA}`, 'orders')} ORDER BY id`);
      expect(rows.rows).toEqual([{ id: 1 }, { id: 2 }]);

      await as(keyA)
        .post('/pipeline')
        .send(jsonPipeline('docs', { table: 'docs' }))
        .expect(200);
      const docs = await as(keyA).get('/pipeline').query({ pipeline: 'docs' }).expect(200);
      expect(docs.body.destination.database.dbName).toBe(tenantA);
      expect((await load(keyA, 'docs', '{"n":1}\n', 'docs.ndjson')).job.status).toBe('success');

      const files = await as(keyA)
        .post('/pipeline')
        .send({
          ...csvPipeline('files', 'x', [['id', 'int']]),
          destination: { objectStore: { bucket: `${tenantA}-output`, prefix: 'out' } },
        })
        .expect(200);
      expect(files.body.status).toBe('ok');
    });

    it.each([
      [() => ({ dbName: 'tapyard_test', schema: `t_${tenantB}`, table: 'orders' }), () => `t_${tenantB}`],
      [() => ({ dbName: 'tapyard_test', schema: 'public', table: 'orders' }), () => 'public'],
      [() => ({ dbName: 'tapyard_test', schema: 'ingest_test', table: 'orders' }), () => 'ingest_test'],
      [() => ({ dbName: 'postgres', schema: `t_${tenantA}`, table: 'orders' }), () => `t_${tenantA}`],
    ])('another schema or database is 400 naming it (%#)', async (database, schema) => {
      const d = database();
      const res = await as(keyA)
        .post('/pipeline')
        .send({
          ...csvPipeline('elsewhere', 'x', [['id', 'int']]),
          destination: { database: { ...d, usePostgres: true } },
        })
        .expect(400);
      expect(res.body.message).toBe(
        `destination PostgreSQL table ${d.dbName}.${schema()}.orders is not allowed: this tenant's tables live in schema 't_${tenantA}' of database 'tapyard_test'`,
      );
      await as(keyA).get('/pipeline').query({ pipeline: 'elsewhere' }).expect(404);
    });

    it("another tenant's MongoDB database or bucket is 400 naming it", async () => {
      const m = await as(keyA)
        .post('/pipeline')
        .send(jsonPipeline('docs2', { dbName: tenantB, table: 'docs' }))
        .expect(400);
      expect(m.body.message).toBe(
        `destination MongoDB collection ${tenantB}.docs is not allowed: this tenant's collections live in MongoDB database '${tenantA}'`,
      );
      for (const bucket of [`${tenantB}-output`, `${tenantA}-config`, 'analytics']) {
        const b = await as(keyA)
          .post('/pipeline')
          .send({
            ...csvPipeline('files2', 'x', [['id', 'int']]),
            destination: { objectStore: { bucket, prefix: 'out' } },
          })
          .expect(400);
        expect(b.body.message).toBe(
          `destination bucket '${bucket}' is not allowed: this tenant writes files only to its bucket '${tenantA}-output'`,
        );
      }
    });

    it('metadata discovery shows a tenant only its own databases, schemas, tables and collections', async () => {
      // Tenant B has data too: a table in its schema, a MongoDB database.
      await pg.query(`CREATE SCHEMA IF NOT EXISTS "t_${tenantB}"`);
      await pg.query(`CREATE TABLE IF NOT EXISTS ${quoted(`t_${tenantB}`, 'secret_b')} (card text)`);
      await mongoClient.db(tenantB).collection('secret_b').insertOne({ card: '4111' });

      const a = as(keyA);
      expect((await a.get('/metadata/postgres/databases').expect(200)).body).toEqual(['tapyard_test']);
      expect((await a.get('/metadata/postgres/schemas').expect(200)).body).toEqual([`t_${tenantA}`]);
      await a.get('/metadata/postgres/schemas').query({ database: 'postgres' }).expect(404);
      expect((await a.get('/metadata/postgres/tables').expect(200)).body).toEqual([
        'orders',
        'orders_rejects',
      ]);
      const cols = await a.get('/metadata/postgres/columns').query({ table: 'orders' }).expect(200);
      expect(cols.body).toEqual([
        { name: 'id', type: 'integer' },
        { name: '_tapyard_load_id', type: 'uuid' },
      ]);
      for (const schema of [`t_${tenantB}`, 'public', 'ingest_test', 'tapyard']) {
        const t = await a.get('/metadata/postgres/tables').query({ schema }).expect(404);
        expect(t.body.message).toBe(`schema '${schema}' does not exist`);
      }
      await a
        .get('/metadata/postgres/columns')
        .query({ schema: `t_${tenantB}`, table: 'secret_b' })
        .expect(404);

      expect((await a.get('/metadata/mongodb/databases').expect(200)).body).toEqual([tenantA]);
      expect((await a.get('/metadata/mongodb/collections').expect(200)).body).toEqual([
        `${tenantA}.docs`,
        `${tenantA}.docs_rejects`,
      ]);
      await a.get('/metadata/mongodb/collections').query({ database: tenantB }).expect(404);
      expect((await as(keyB).get('/metadata/mongodb/databases').expect(200)).body).toEqual([tenantB]);

      // The operator keeps the whole view, without the platform's own schemas.
      const schemas = (await op().get('/metadata/postgres/schemas').expect(200)).body as string[];
      expect(schemas).toEqual(expect.arrayContaining([`t_${tenantA}`, `t_${tenantB}`, 'public']));
      expect(schemas).not.toContain('tapyard');
    });

    it("an operator key without *:* sees no tenant's places, in discovery and natural-language SQL", async () => {
      await pg.query(`CREATE SCHEMA IF NOT EXISTS "t_${tenantB}"`);
      await pg.query(`CREATE TABLE IF NOT EXISTS ${quoted(`t_${tenantB}`, 'secret_b')} (card text)`);
      await mongoClient.db(tenantB).collection('secret_b').insertOne({ card: '4111' });
      const reader = as(
        await issueKey(api.http, boot, `op-reader-${suffix}`, {
          capabilities: ['metadata:read', 'search:query'],
        }),
      );

      const schemas = (await reader.get('/metadata/postgres/schemas').expect(200)).body as string[];
      expect(schemas).toContain('public');
      expect(schemas).not.toContain(`t_${tenantA}`);
      expect(schemas).not.toContain(`t_${tenantB}`);
      const t = await reader
        .get('/metadata/postgres/tables')
        .query({ schema: `t_${tenantB}` })
        .expect(404);
      expect(t.body.message).toBe(`schema 't_${tenantB}' does not exist`);
      await reader
        .get('/metadata/postgres/columns')
        .query({ schema: `t_${tenantB}`, table: 'secret_b' })
        .expect(404);
      const dbs = (await reader.get('/metadata/mongodb/databases').expect(200)).body as string[];
      expect(dbs).not.toContain(tenantB);
      const all = (await reader.get('/metadata/mongodb/collections').expect(200)).body as string[];
      expect(all).not.toContain(`${tenantB}.secret_b`);
      await reader.get('/metadata/mongodb/collections').query({ database: tenantB }).expect(404);

      // Refused before any model is asked: the schema is not one the key may query.
      const q = await reader
        .post('/query/postgres')
        .send({ question: 'all cards', schema: `t_${tenantB}` })
        .expect(404);
      expect(q.body.message).toBe(`schema 't_${tenantB}' does not exist`);

      // Full access still reaches into the tenants (as issuing their keys does).
      expect((await op().get('/metadata/mongodb/databases').expect(200)).body).toContain(tenantB);
      expect(
        (
          await op()
            .get('/metadata/postgres/tables')
            .query({ schema: `t_${tenantB}` })
            .expect(200)
        ).body,
      ).toContain('secret_b');
    });
  });

  describe('deleteData drops only what the pipeline created', () => {
    it('a table that existed before is left in place; the rejects table the pipeline made is dropped', async () => {
      const table = `h3pre_${suffix}`;
      await pg.query(`CREATE TABLE ingest_test."${table}" (id integer)`);
      await pg.query(`INSERT INTO ingest_test."${table}" VALUES (42)`);
      await op()
        .post('/pipeline')
        .send(csvPipeline('pre', table, [['id', 'int']]))
        .expect(200);
      expect((await load(boot, 'pre', 'id\n1\n')).job.status).toBe('success');
      const res = await op().delete('/pipeline').query({ pipeline: 'pre', deleteData: 'true' }).expect(200);
      expect(res.body).toEqual({
        status: 'ok',
        pipeline: 'pre',
        dataDeleted: true,
        dropped: [`PostgreSQL table tapyard_test.ingest_test.${table}_rejects`],
        skipped: [
          {
            object: `PostgreSQL table tapyard_test.ingest_test.${table}`,
            reason: 'this pipeline did not create it: left in place',
          },
        ],
      });
      const kept = await pg.query(`SELECT id FROM ingest_test."${table}" ORDER BY id`);
      expect(kept.rows).toEqual([{ id: 1 }, { id: 42 }]);
      expect(await regclass(quoted('ingest_test', `${table}_rejects`))).toBeNull();
    });

    it('a table the pipeline created is dropped with its rejects table', async () => {
      const table = `h3own_${suffix}`;
      await op()
        .post('/pipeline')
        .send(csvPipeline('own', table, [['id', 'int']]))
        .expect(200);
      expect((await load(boot, 'own', 'id\n1\n')).job.status).toBe('success');
      const res = await op().delete('/pipeline').query({ pipeline: 'own', deleteData: 'true' }).expect(200);
      expect(res.body.dropped.sort()).toEqual([
        `PostgreSQL table tapyard_test.ingest_test.${table}`,
        `PostgreSQL table tapyard_test.ingest_test.${table}_rejects`,
      ]);
      expect(res.body.skipped).toEqual([]);
      expect(await regclass(quoted('ingest_test', table))).toBeNull();
    });

    it('a MongoDB collection that existed before is left in place', async () => {
      await mongoClient.db(operatorMongoDb).collection('pre').insertOne({ mine: true });
      await op()
        .post('/pipeline')
        .send(jsonPipeline('mpre', { dbName: operatorMongoDb, table: 'pre' }))
        .expect(200);
      expect((await load(boot, 'mpre', '{"n":1}\n', 'x.ndjson')).job.status).toBe('success');
      const res = await op().delete('/pipeline').query({ pipeline: 'mpre', deleteData: 'true' }).expect(200);
      expect(res.body.dropped).toEqual([`MongoDB collection ${operatorMongoDb}.pre_rejects`]);
      const names = (await mongoClient.db(operatorMongoDb).listCollections().toArray()).map((c) => c.name);
      expect(names).toContain('pre');
      expect(names).not.toContain('pre_rejects');
      expect(await mongoClient.db(operatorMongoDb).collection('pre').countDocuments({ mine: true })).toBe(1);
    });

    it("files of another pipeline under a nested prefix survive the outer pipeline's delete", async () => {
      const files = (name: string, prefix: string) => ({
        ...csvPipeline(name, 'x', [['id', 'int']]),
        destination: { objectStore: { prefix, format: 'csv' } },
      });
      await op()
        .post('/pipeline')
        .send(files('outer', `shared${suffix}`))
        .expect(200);
      await op()
        .post('/pipeline')
        .send(files('inner', `shared${suffix}/inner`))
        .expect(200);
      const outer = await load(boot, 'outer', 'id\n1\n');
      const inner = await load(boot, 'inner', 'id\n2\n');
      expect([outer.job.status, inner.job.status]).toEqual(['success', 'success']);
      const res = await op().delete('/pipeline').query({ pipeline: 'outer', deleteData: 'true' }).expect(200);
      const bucket = `${operator}-output`;
      expect(res.body.dropped).toEqual([`files under s3://${bucket}/shared${suffix}/job=${outer.token}/`]);
      expect(await minio.keys(bucket, `shared${suffix}/`)).toEqual([
        `shared${suffix}/inner/job=${inner.token}/_SUCCESS`,
        `shared${suffix}/inner/job=${inner.token}/part-00000.csv`,
      ]);
    });

    it('a delete that meets a table in use fails whole, keeps the pipeline marked, and finishes when repeated', async () => {
      const table = `h3lock_${suffix}`;
      await op()
        .post('/pipeline')
        .send(csvPipeline('locked', table, [['id', 'int']]))
        .expect(200);
      expect((await load(boot, 'locked', 'id\n1\n')).job.status).toBe('success');
      const holder = new Client({ connectionString: TEST_DATABASE_URL });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        // A reader holds the rejects table, which the delete drops in the same transaction as the data.
        await holder.query(`LOCK TABLE ingest_test."${table}_rejects" IN ACCESS SHARE MODE`);
        const failed = await op()
          .delete('/pipeline')
          .query({ pipeline: 'locked', deleteData: 'true' })
          .timeout(15000)
          .expect(409);
        expect(failed.body.message).toBe(
          `PostgreSQL table tapyard_test.ingest_test.${table}_rejects is in use by another session (waited 5 s); nothing was dropped in its database`,
        );
        // Nothing half-dropped: the data table is still there, and the pipeline takes no loads or changes.
        expect(await regclass(quoted('ingest_test', table))).not.toBeNull();
        await op().get('/pipeline').query({ pipeline: 'locked' }).expect(200);
        const upload = await op()
          .post('/pipeline/upload')
          .field('pipeline', 'locked')
          .attach('file', Buffer.from('id\n2\n'), 'more.csv')
          .expect(409);
        expect(upload.body.message).toMatch(/pipeline 'locked' is being deleted .*repeat the DELETE/);
        await op()
          .post('/pipeline')
          .send(csvPipeline('locked', table, [['id', 'int']]))
          .expect(409);
      } finally {
        await holder.query('COMMIT').catch(() => undefined);
        await holder.end();
      }
      const done = await op()
        .delete('/pipeline')
        .query({ pipeline: 'locked', deleteData: 'true' })
        .expect(200);
      expect(done.body.dropped.sort()).toEqual([
        `PostgreSQL table tapyard_test.ingest_test.${table}`,
        `PostgreSQL table tapyard_test.ingest_test.${table}_rejects`,
      ]);
      expect(await regclass(quoted('ingest_test', table))).toBeNull();
      await op().get('/pipeline').query({ pipeline: 'locked' }).expect(404);
    }, 60000);
  });

  describe('rejects tables', () => {
    it('a 63-character table keeps its rejects in a table of its own', async () => {
      const table = `h3_${suffix}_${'l'.repeat(63 - 4 - suffix.length)}`;
      expect(table).toHaveLength(63);
      await op()
        .post('/pipeline')
        .send(csvPipeline('long', table, [['id', 'int']]))
        .expect(200);
      const { job } = await load(boot, 'long', 'id\n1\nnot-a-number\n');
      expect(job.status).toBe('warning');
      const names = await pg.query(
        `SELECT tablename FROM pg_tables WHERE schemaname = 'ingest_test' AND tablename LIKE $1 ORDER BY tablename`,
        [`h3\\_${suffix}\\_%`],
      );
      const tables = names.rows.map((r: { tablename: string }) => r.tablename);
      expect(tables).toHaveLength(2);
      const rejects = tables.find((t: string) => t !== table) as string;
      expect(rejects).toMatch(/^h3_.{39}_[0-9a-f]{12}_rejects$/);
      expect((await pg.query(`SELECT id FROM ingest_test."${table}"`)).rows).toEqual([{ id: 1 }]);
      const kept = await pg.query(`SELECT raw FROM ingest_test."${rejects}"`);
      expect(kept.rows).toEqual([{ raw: 'not-a-number' }]);
    });

    it('a data table named like a rejects table is 400 naming it', async () => {
      const res = await op()
        .post('/pipeline')
        .send(csvPipeline('clash', 'sales_rejects', [['id', 'int']]))
        .expect(400);
      expect(res.body.message).toBe(
        "destination PostgreSQL table tapyard_test.ingest_test.sales_rejects is not allowed: names ending in '_rejects' are kept for rejected rows",
      );
    });
  });
});
