import { createHash } from 'node:crypto';
import { Client } from 'pg';
import { mongo } from 'mongoose';
import {
  Destination,
  LoadTarget,
  MongoDbDestination,
  Payload,
  PostgresDestination,
} from '@tapyard/destinations';
import { ServiceUnavailableError } from '@tapyard/core';
import { Value } from '@tapyard/model';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { newBootstrapKey, issueKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_MONGODB_URI, TEST_OBJECT_STORE, uniqueEnvironment } from './support/env';
import { encodeRows } from './support/destinations';
import { upload, waitForJob } from './support/ingest';
import { TestMinio } from './support/minio';

/** A job's token is a UUID (the load-id column is one): the same label gives the same token. */
function tokenOf(label: string): string {
  const h = createHash('sha256').update(label).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const FIELDS = [
  { name: 'id', type: 'int' },
  { name: 'label', type: 'string' },
  { name: 'amount', type: 'double' },
];
const COLUMNS = FIELDS.map((f) => ({ name: f.name, type: f.type as 'int' | 'string' | 'double' }));

const csv = (rows: [number, string, number][]): string =>
  'id,label,amount\n' + rows.map((r) => r.join(',')).join('\n') + '\n';

/** Uploads and waits for the job; returns its token after checking it succeeded. */
async function load(api: TestApi, pipeline: string, content: string): Promise<string> {
  const token = await upload(api.http, pipeline, content, `${pipeline}.csv`);
  const { rollup } = await waitForJob(api.http, token);
  expect(rollup.status).toBe('success');
  return token;
}

/** The rows of a job as payloads, the delivery failing after the first batch as a lost connection would. */
function delivery(dest: Destination, target: LoadTarget, batches: Value[][][], dieAfterFirst: boolean) {
  return async function* (): AsyncGenerator<Payload> {
    for (const [i, rows] of batches.entries()) {
      yield encodeRows(dest, target, rows);
      if (dieAfterFirst && i === 0) throw new ServiceUnavailableError('postgres', 'the worker died');
    }
  };
}
const none = async function* () {};

/**
 * A job delivered, killed midway, delivered again and delivered a third time leaves what one
 * delivery leaves: `expected` (read back by `contents`).
 */
async function expectRedeliveryLikeOne(
  dest: Destination,
  target: LoadTarget,
  batches: Value[][][],
  contents: () => Promise<unknown>,
  expected: unknown,
): Promise<void> {
  await dest.prepare(target);
  await expect(
    dest.load(target, delivery(dest, target, batches, true)(), none, () => undefined),
  ).rejects.toThrow(/the worker died/);
  expect(await dest.committed(target)).toBeNull();
  await dest.prepare(target);
  expect(
    await dest.load(target, delivery(dest, target, batches, false)(), none, () => undefined),
  ).toMatchObject({
    alreadyLoaded: false,
  });
  expect(await contents()).toEqual(expected);
  expect(
    await dest.load(target, delivery(dest, target, batches, false)(), none, () => undefined),
  ).toMatchObject({
    alreadyLoaded: true,
  });
  expect(await contents()).toEqual(expected);
}

describe('write modes and load ids (real PostgreSQL, FerretDB and MinIO, through the API)', () => {
  const env = uniqueEnvironment('wmodes');
  const prefix = `wm_${env.replace(/[^a-z0-9]/g, '_')}`;
  const mongoDb = prefix.slice(0, 60);
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  let mongoClient: mongo.MongoClient;

  const pgPipeline = (name: string, destination: Record<string, unknown> = {}) => ({
    name,
    source: {
      fileAttributes: { csvAttributes: { delimiter: ',', header: true } },
      schemaProperties: { fields: FIELDS },
    },
    destination: {
      database: {
        dbName: 'tapyard_test',
        schema: 'ingest_test',
        table: `${prefix}_${name}`,
        usePostgres: true,
      },
      ...destination,
    },
  });
  const mongoPipeline = (name: string, destination: Record<string, unknown> = {}) => ({
    ...pgPipeline(name),
    destination: {
      database: { dbName: mongoDb, table: name, usePostgres: false },
      ...destination,
    },
  });
  const table = (name: string) => `ingest_test."${prefix}_${name}"`;
  const rowsOf = async (name: string) =>
    (
      await pg.query(
        `SELECT id, label, amount, _tapyard_load_id AS "loadId" FROM ${table(name)} ORDER BY id, _tapyard_load_id`,
      )
    ).rows;
  const docsOf = async (name: string) =>
    (await mongoClient.db(mongoDb).collection(name).find({}).toArray())
      .map(({ id, label, amount, _tapyard_load_id }) => ({ id, label, amount, loadId: _tapyard_load_id }))
      .sort((a, b) => Number(a.id) - Number(b.id));
  const save = (body: unknown) => api.http.post('/api/v1/pipeline').send(body as object);

  beforeAll(async () => {
    const flags = { TAPYARD_ENV: env, MONGODB_URI: TEST_MONGODB_URI, ...TEST_OBJECT_STORE };
    api = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    mongoClient = await new mongo.MongoClient(TEST_MONGODB_URI).connect();
  });
  afterAll(async () => {
    const { rows } = await pg.query<{ t: string }>(
      `SELECT tablename AS t FROM pg_tables WHERE schemaname = 'ingest_test' AND tablename LIKE $1`,
      [`${prefix}%`],
    );
    for (const { t } of rows) await pg.query(`DROP TABLE IF EXISTS ingest_test."${t}"`);
    await pg.end();
    await mongoClient.db(mongoDb).dropDatabase();
    await mongoClient.close();
    await worker.close();
    await api.close();
  });

  it('refuses merge without a primary key, a key naming unknown columns, and modes a destination cannot take', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ writeMode: 'merge' }, 'destination.primaryKey', /required for writeMode merge/],
      [
        { writeMode: 'merge', primaryKey: ['id', 'order_no'] },
        'destination.primaryKey',
        /'order_no', not among the loaded columns \(id, label, amount\)/,
      ],
      [{ primaryKey: ['id'] }, 'destination.primaryKey', /applies to writeMode merge only/],
      [{ writeMode: 'upsert' }, 'destination.writeMode', /must be one of: append, replace, merge/],
      [{ writeMode: 'merge', primaryKey: 'id' }, 'destination.primaryKey', /must be an array/],
    ];
    for (const [options, field, problem] of cases) {
      const res = await save(pgPipeline('refused', options)).expect(400);
      expect(res.body.details).toContainEqual({ field, problem: expect.stringMatching(problem) });
    }
    const objectStore = await save({
      ...pgPipeline('refused'),
      destination: { objectStore: { prefix: 'x' }, writeMode: 'merge', primaryKey: ['id'] },
    }).expect(400);
    expect(objectStore.body.message).toMatch(/destination.writeMode merge needs a database section/);
    const reserved = await save({
      ...pgPipeline('refused'),
      source: { schemaProperties: { fields: [...FIELDS, { name: '_tapyard_load_id', type: 'string' }] } },
    }).expect(400);
    expect(reserved.body.details).toContainEqual({
      field: 'source.schemaProperties.fields[3].name',
      problem: expect.stringMatching(/'_tapyard_load_id' is reserved/),
    });
    await api.http.get('/api/v1/pipeline').query({ pipeline: 'refused' }).expect(404);
  });

  it('stores the mode and key (append, the default, is left out), and lists them in the OpenAPI document', async () => {
    await save(pgPipeline('plain', { writeMode: 'append' })).expect(200);
    const plain = (await api.http.get('/api/v1/pipeline').query({ pipeline: 'plain' })).body;
    expect(Object.keys(plain.destination)).toEqual(['database']);
    // The same body without the default is the same definition: no new version.
    expect((await save(pgPipeline('plain')).expect(200)).body.version).toBe(1);
    await save(pgPipeline('keyed', { writeMode: 'merge', primaryKey: ['id', 'label'] })).expect(200);
    const keyed = (await api.http.get('/api/v1/pipeline').query({ pipeline: 'keyed' })).body;
    expect(keyed.destination).toMatchObject({ writeMode: 'merge', primaryKey: ['id', 'label'] });
    const doc = (await api.http.get('/api/docs-json').expect(200)).body;
    expect(doc.components.schemas.DestinationDto.properties.writeMode.enum).toEqual([
      'append',
      'replace',
      'merge',
    ]);
    expect(doc.components.schemas.DestinationDto.properties.primaryKey.type).toBe('array');
  });

  it('PostgreSQL merge: the same file twice leaves no duplicates, a changed file updates values', async () => {
    await save(pgPipeline('pgmerge', { writeMode: 'merge', primaryKey: ['id'] })).expect(200);
    const first = await load(
      api,
      'pgmerge',
      csv([
        [1, 'a', 1],
        [2, 'b', 2],
        [3, 'c', 3],
      ]),
    );
    await load(
      api,
      'pgmerge',
      csv([
        [1, 'a', 1],
        [2, 'b', 2],
        [3, 'c', 3],
      ]),
    );
    expect(await rowsOf('pgmerge')).toHaveLength(3);
    // id 4 twice in one file: the later row wins.
    const second = await load(
      api,
      'pgmerge',
      csv([
        [2, 'B', 20],
        [4, 'd', 4],
        [4, 'D', 40],
      ]),
    );
    expect(await rowsOf('pgmerge')).toEqual([
      { id: 1, label: 'a', amount: 1, loadId: expect.any(String) },
      { id: 2, label: 'B', amount: 20, loadId: second },
      { id: 3, label: 'c', amount: 3, loadId: expect.any(String) },
      { id: 4, label: 'D', amount: 40, loadId: second },
    ]);
    expect((await rowsOf('pgmerge'))[0].loadId).not.toBe(first);
  });

  it('PostgreSQL replace: only the second file remains, and a reader meanwhile sees the old or the new count', async () => {
    await save(pgPipeline('pgreplace', { writeMode: 'replace' })).expect(200);
    const old = Array.from({ length: 5 }, (_, i): [number, string, number] => [i + 1, 'old', i]);
    await load(api, 'pgreplace', csv(old));
    const fresh = Array.from({ length: 40_000 }, (_, i): [number, string, number] => [i + 1, 'new', i / 2]);
    const token = await upload(api.http, 'pgreplace', csv(fresh), 'fresh.csv');
    let done = false;
    const finished = waitForJob(api.http, token).finally(() => (done = true));
    const seen = new Set<number>();
    // Bounded: the job ends, or the reader gives up after this many reads.
    for (let reads = 0; !done && reads < 100_000; reads++) {
      seen.add(Number((await pg.query(`SELECT count(*) AS n FROM ${table('pgreplace')}`)).rows[0].n));
    }
    expect((await finished).rollup.status).toBe('success');
    expect([...seen].filter((n) => n !== old.length && n !== fresh.length)).toEqual([]);
    const after = await pg.query(
      `SELECT count(*)::int AS n, min(label) AS lo, max(label) AS hi, count(DISTINCT _tapyard_load_id)::int AS jobs,
              min(_tapyard_load_id::text) AS job FROM ${table('pgreplace')}`,
    );
    expect(after.rows[0]).toEqual({ n: fresh.length, lo: 'new', hi: 'new', jobs: 1, job: token });
  }, 180_000);

  it("every row carries its job's load id, and DELETE .../rows removes exactly that job's rows", async () => {
    await save(pgPipeline('pgappend')).expect(200);
    const a = await load(
      api,
      'pgappend',
      csv([
        [1, 'a', 1],
        [2, 'a', 2],
      ]),
    );
    const b = await upload(api.http, 'pgappend', `${csv([[3, 'b', 3]])}x,bad,0\n`, 'b.csv');
    expect((await waitForJob(api.http, b)).rollup.status).toBe('warning');
    expect((await rowsOf('pgappend')).map((r) => [r.id, r.loadId])).toEqual([
      [1, a],
      [2, a],
      [3, b],
    ]);
    const res = await api.http.delete(`/api/v1/pipeline/jobs/${a}/rows`).expect(200);
    expect(res.body).toEqual({ status: 'ok', pipelineToken: a, removed: { postgres: 2 } });
    expect((await rowsOf('pgappend')).map((r) => [r.id, r.loadId])).toEqual([[3, b]]);
    // Its rejects go with it; the other job's stay.
    const rejects = await pg.query(`SELECT pipeline_token FROM ingest_test."${prefix}_pgappend_rejects"`);
    expect(rejects.rows).toEqual([{ pipeline_token: b }]);
    await api.http.delete(`/api/v1/pipeline/jobs/${b}/rows`).expect(200);
    expect(await pg.query(`SELECT 1 FROM ingest_test."${prefix}_pgappend_rejects"`)).toMatchObject({
      rowCount: 0,
    });
    const unknown = await api.http.delete('/api/v1/pipeline/jobs/no-such-token/rows').expect(404);
    expect(unknown.body).toMatchObject({
      code: 'pipeline.job_not_found',
      message: "no job has pipeline token 'no-such-token'",
    });
  });

  it('a pipeline stored before load ids loads as before, and its rows cannot be removed by job', async () => {
    await save(pgPipeline('legacy')).expect(200);
    await pg.query(
      `UPDATE tapyard.pipelines SET load_id = false WHERE environment = $1 AND name = 'legacy'`,
      [env],
    );
    const token = await load(api, 'legacy', csv([[1, 'a', 1]]));
    const columns = await pg.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'ingest_test' AND table_name = $1 ORDER BY ordinal_position`,
      [`${prefix}_legacy`],
    );
    expect(columns.rows.map((r) => r.column_name)).toEqual(['id', 'label', 'amount']);
    const res = await api.http.delete(`/api/v1/pipeline/jobs/${token}/rows`).expect(409);
    expect(res.body.code).toBe('pipeline.rows_not_removable');
  });

  it('the load id is a uuid filled once per load, and a table whose id column is text (made before Nov 2026) keeps working', async () => {
    await save(pgPipeline('uuidcol')).expect(200);
    const first = await load(api, 'uuidcol', csv([[1, 'a', 1]]));
    const second = await load(api, 'uuidcol', csv([[2, 'b', 2]]));
    const column = await pg.query(
      `SELECT data_type, column_default FROM information_schema.columns
        WHERE table_schema = 'ingest_test' AND table_name = $1 AND column_name = '_tapyard_load_id'`,
      [`${prefix}_uuidcol`],
    );
    expect(column.rows).toEqual([{ data_type: 'uuid', column_default: 'tapyard_meta.load_id()' }]);
    // Folded when each COPY is planned, not when the table was made nor cached across loads.
    expect((await rowsOf('uuidcol')).map((r) => [r.id, r.loadId])).toEqual([
      [1, first],
      [2, second],
    ]);
    // A statement outside a load gets no id (the setting is unset, or '' once a load set it).
    await pg.query(`INSERT INTO ${table('uuidcol')} (id, label, amount) VALUES (3, 'by hand', 3)`);
    expect((await rowsOf('uuidcol'))[2]).toEqual({ id: 3, label: 'by hand', amount: 3, loadId: null });

    // The column as releases before Nov 2026 made it.
    await pg.query(
      `CREATE TABLE ${table('textcol')} (id integer, label text, amount double precision,
         _tapyard_load_id text DEFAULT nullif(current_setting('tapyard.load_id', true), ''))`,
    );
    await save(pgPipeline('textcol')).expect(200);
    const a = await load(api, 'textcol', csv([[1, 'a', 1]]));
    const b = await load(api, 'textcol', csv([[2, 'b', 2]]));
    expect((await rowsOf('textcol')).map((r) => [r.id, r.loadId])).toEqual([
      [1, a],
      [2, b],
    ]);
    const read = await api.http.get(`/api/v1/pipeline/jobs/${a}/rows`).expect(200);
    expect(read.body.rows).toEqual([{ id: 1, label: 'a', amount: 1 }]);
    for (const [name, token, left] of [
      ['textcol', a, [2]],
      ['uuidcol', first, [2, 3]],
    ] as const) {
      const res = await api.http.delete(`/api/v1/pipeline/jobs/${token}/rows`).expect(200);
      expect(res.body.removed).toEqual({ postgres: 1 });
      expect((await rowsOf(name)).map((r) => r.id)).toEqual(left);
    }
  });

  it('MongoDB merge and replace: no duplicates, updated values, only the last file, load ids, rows removable', async () => {
    await save(mongoPipeline('mmerge', { writeMode: 'merge', primaryKey: ['id'] })).expect(200);
    await load(
      api,
      'mmerge',
      csv([
        [1, 'a', 1],
        [2, 'b', 2],
      ]),
    );
    await load(
      api,
      'mmerge',
      csv([
        [1, 'a', 1],
        [2, 'b', 2],
      ]),
    );
    const second = await load(
      api,
      'mmerge',
      csv([
        [2, 'B', 20],
        [3, 'c', 3],
        [3, 'C', 30],
      ]),
    );
    expect(await docsOf('mmerge')).toEqual([
      { id: 1, label: 'a', amount: 1, loadId: expect.any(String) },
      { id: 2, label: 'B', amount: 20, loadId: second },
      { id: 3, label: 'C', amount: 30, loadId: second },
    ]);

    await save(mongoPipeline('mreplace', { writeMode: 'replace' })).expect(200);
    await load(
      api,
      'mreplace',
      csv([
        [1, 'old', 1],
        [2, 'old', 2],
        [3, 'old', 3],
      ]),
    );
    const fresh = await load(api, 'mreplace', csv([[7, 'new', 7]]));
    expect(await docsOf('mreplace')).toEqual([{ id: 7, label: 'new', amount: 7, loadId: fresh }]);
    const collections = (await mongoClient.db(mongoDb).listCollections({}, { nameOnly: true }).toArray()).map(
      (c) => c.name,
    );
    expect(collections.filter((c) => c.includes('tapyard_replace'))).toEqual([]);

    const res = await api.http.delete(`/api/v1/pipeline/jobs/${second}/rows`).expect(200);
    expect(res.body).toEqual({ status: 'ok', pipelineToken: second, removed: { mongodb: 2 } });
    expect((await docsOf('mmerge')).map((d) => d.id)).toEqual([1]);
  }, 120_000);

  it('object store replace: _LATEST names the newest job folder; removing that job removes its folder and _LATEST', async () => {
    const minio = new TestMinio();
    const bucket = `${env}-output`;
    await save({
      ...pgPipeline('osreplace'),
      destination: { objectStore: { prefix: 'exports/osreplace', format: 'csv' }, writeMode: 'replace' },
    }).expect(200);
    await load(api, 'osreplace', csv([[1, 'a', 1]]));
    const second = await load(
      api,
      'osreplace',
      csv([
        [2, 'b', 2],
        [3, 'c', 3],
      ]),
    );
    expect(JSON.parse((await minio.read(bucket, 'exports/osreplace/_LATEST')).toString())).toEqual({
      pipelineToken: second,
      folder: `job=${second}/`,
    });
    const res = await api.http.delete(`/api/v1/pipeline/jobs/${second}/rows`).expect(200);
    expect(res.body.removed).toEqual({ objectstore: 2 });
    const left = await minio.keys(bucket, 'exports/osreplace/');
    expect(left.filter((k) => k.includes(second) || k.endsWith('_LATEST'))).toEqual([]);
    expect(left.length).toBeGreaterThan(0);
    // A later replace names its folder again; a delete with data takes the pointer along.
    await load(api, 'osreplace', csv([[4, 'd', 4]]));
    expect(await minio.keys(bucket, 'exports/osreplace/_LATEST')).toHaveLength(1);
    await api.http
      .delete('/api/v1/pipeline')
      .query({ pipeline: 'osreplace', deleteData: 'true' })
      .expect(200);
    expect(await minio.keys(bucket, 'exports/osreplace/')).toEqual([]);
  });

  it('a replace job that loads no row (every row rejected) fails and leaves the old rows (PostgreSQL, MongoDB, object store)', async () => {
    const bucket = `${env}-output`;
    const minio = new TestMinio();
    const bodies = {
      pgnone: pgPipeline('pgnone', { writeMode: 'replace' }),
      mnone: mongoPipeline('mnone', { writeMode: 'replace' }),
      osnone: {
        ...pgPipeline('osnone'),
        destination: { objectStore: { prefix: 'exports/osnone', format: 'csv' }, writeMode: 'replace' },
      },
    };
    for (const [name, body] of Object.entries(bodies)) {
      await save(body).expect(200);
      const kept = await load(api, name, csv([[1, 'kept', 1]]));
      const bad = await upload(api.http, name, 'id,label,amount\nx,bad,1\ny,bad,2\n', 'bad.csv');
      const { rollup } = await waitForJob(api.http, bad);
      expect(rollup.status).toBe('error');
      expect(rollup.jobs[0].lastError?.description).toMatch(/nothing was loaded/);
      if (name === 'pgnone')
        expect((await rowsOf(name)).map((r) => [r.label, r.loadId])).toEqual([['kept', kept]]);
      if (name === 'mnone')
        expect((await docsOf(name)).map((d) => [d.label, d.loadId])).toEqual([['kept', kept]]);
      if (name === 'osnone') {
        const latest = await minio.read(bucket, 'exports/osnone/_LATEST');
        expect(JSON.parse(latest.toString()).pipelineToken).toBe(kept);
      }
    }
  });

  it('a reader while a replace is half written sees the old rows, then the new ones (PostgreSQL and MongoDB)', async () => {
    const cases: [string, Destination, Record<string, unknown>, () => Promise<number>][] = [
      [
        'pghalf',
        api.app.get(PostgresDestination),
        pgPipeline('pghalf').destination.database,
        async () => Number((await pg.query(`SELECT count(*) AS n FROM ${table('pghalf')}`)).rows[0].n),
      ],
      [
        'mhalf',
        api.app.get(MongoDbDestination),
        { dbName: mongoDb, schema: 'public', table: 'mhalf', usePostgres: false },
        () => mongoClient.db(mongoDb).collection('mhalf').countDocuments(),
      ],
    ];
    for (const [name, dest, database, count] of cases) {
      const body = name === 'pghalf' ? pgPipeline(name) : mongoPipeline(name);
      await save({ ...body, destination: { ...body.destination, writeMode: 'replace' } }).expect(200);
      await load(
        api,
        name,
        csv([
          [1, 'old', 1],
          [2, 'old', 2],
          [3, 'old', 3],
        ]),
      );
      const target: LoadTarget = {
        environment: env,
        pipeline: name,
        destination: { database, writeMode: 'replace' } as unknown as LoadTarget['destination'],
        columns: COLUMNS,
        pipelineToken: tokenOf(`half-${name}-${env}`),
        loadId: true,
      };
      let release!: () => void;
      const gate = new Promise<void>((ok) => (release = ok));
      let halfWritten!: () => void;
      const reached = new Promise<void>((ok) => (halfWritten = ok));
      const payloads = async function* (): AsyncGenerator<Payload> {
        yield encodeRows(dest, target, [[10, 'new', 10]]);
        yield encodeRows(dest, target, [[11, 'new', 11]]);
        halfWritten();
        await gate;
        yield encodeRows(dest, target, [[12, 'new', 12]]);
      };
      await dest.prepare(target);
      const loading = dest.load(target, payloads(), none, () => undefined);
      await reached;
      expect(await count()).toBe(3);
      release();
      expect(await loading).toMatchObject({ loaded: 3, alreadyLoaded: false });
      expect(await count()).toBe(3);
      const labels =
        name === 'pghalf'
          ? (await rowsOf(name)).map((r) => r.label)
          : (await docsOf(name)).map((d) => d.label);
      expect(labels).toEqual(['new', 'new', 'new']);
    }
  });

  describe('a redelivered job (after a crash midway) leaves what one delivery leaves', () => {
    const batches: Value[][][] = [
      [
        [1, 'x', 1.5],
        [2, 'x', 2.5],
      ],
      [
        [2, 'y', 3.5],
        [3, 'y', 4.5],
      ],
    ];
    const target = (
      name: string,
      database: Record<string, unknown>,
      destination: Record<string, unknown>,
    ) => ({
      environment: env,
      pipeline: name,
      destination: { database, ...destination } as unknown as LoadTarget['destination'],
      columns: COLUMNS,
      pipelineToken: tokenOf(`redelivered-${name}-${env}`),
      loadId: true,
    });

    it('PostgreSQL replace and merge', async () => {
      for (const [name, mode] of [
        ['pgredo_replace', { writeMode: 'replace' }],
        ['pgredo_merge', { writeMode: 'merge', primaryKey: ['id'] }],
      ] as const) {
        await save(pgPipeline(name, mode)).expect(200);
        await load(
          api,
          name,
          csv([
            [1, 'before', 0],
            [9, 'before', 0],
          ]),
        );
        const t = target(name, pgPipeline(name).destination.database, mode);
        const token = t.pipelineToken;
        await expectRedeliveryLikeOne(
          api.app.get(PostgresDestination),
          t,
          batches,
          () => rowsOf(name).then((rows) => rows.map((r) => [r.id, r.label, r.loadId === token])),
          mode.writeMode === 'replace'
            ? [
                [1, 'x', true],
                [2, 'x', true],
                [2, 'y', true],
                [3, 'y', true],
              ]
            : [
                [1, 'x', true],
                [2, 'y', true],
                [3, 'y', true],
                [9, 'before', false],
              ],
        );
      }
    });

    it('MongoDB replace and merge', async () => {
      for (const [name, mode] of [
        ['mredo_replace', { writeMode: 'replace' }],
        ['mredo_merge', { writeMode: 'merge', primaryKey: ['id'] }],
      ] as const) {
        await save(mongoPipeline(name, mode)).expect(200);
        await load(
          api,
          name,
          csv([
            [1, 'before', 0],
            [9, 'before', 0],
          ]),
        );
        const t = target(name, { dbName: mongoDb, schema: 'public', table: name, usePostgres: false }, mode);
        const token = t.pipelineToken;
        await expectRedeliveryLikeOne(
          api.app.get(MongoDbDestination),
          t,
          batches,
          () => docsOf(name).then((docs) => docs.map((d) => [d.id, d.label, d.loadId === token])),
          mode.writeMode === 'replace'
            ? [
                [1, 'x', true],
                [2, 'x', true],
                [2, 'y', true],
                [3, 'y', true],
              ]
            : [
                [1, 'x', true],
                [2, 'y', true],
                [3, 'y', true],
                [9, 'before', false],
              ],
        );
      }
    }, 60_000);
  });
});

describe('DELETE /pipeline/jobs/{pipelineToken}/rows: capability, tenant and scope', () => {
  const operator = uniqueEnvironment('wmrows');
  const boot = newBootstrapKey();
  const tenantA = `wra${operator.slice(-8)}`;
  const tenantB = `wrb${operator.slice(-8)}`;
  let api: TestApi;
  let worker: TestWorker;
  let pg: Client;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    const flags = {
      TAPYARD_ENV: operator,
      MULTI_TENANT: 'true',
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
      ...TEST_OBJECT_STORE,
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    keys.a = await issueKey(api.http, boot, 'a-admin', { template: 'full-access' }, { tenant: tenantA });
    keys.b = await issueKey(api.http, boot, 'b-admin', { template: 'full-access' }, { tenant: tenantB });
    keys.aLoader = await issueKey(
      api.http,
      boot,
      'a-loader',
      { capabilities: ['pipeline:read', 'pipeline:upload', 'job:read'] },
      { tenant: tenantA },
    );
  });
  afterAll(async () => {
    await pg.query(`DROP SCHEMA IF EXISTS "t_${tenantA}" CASCADE`);
    await pg.end();
    await worker.close();
    await api.close();
  });

  it("is 403 without pipeline:delete, 404 for another tenant's job, and removes the rows for its own tenant", async () => {
    await api.http
      .post('/api/v1/pipeline')
      .set('x-api-key', keys.a)
      .send({
        name: 'orders',
        source: {
          fileAttributes: { csvAttributes: { delimiter: ',', header: true } },
          schemaProperties: { fields: FIELDS },
        },
        destination: { database: { table: 'orders' } },
      })
      .expect(200);
    const token = await api.http
      .post('/api/v1/pipeline/upload')
      .set('x-api-key', keys.a)
      .field('pipeline', 'orders')
      .attach(
        'file',
        Buffer.from(
          csv([
            [1, 'a', 1],
            [2, 'b', 2],
          ]),
        ),
        'orders.csv',
      )
      .expect(200)
      .then((r) => r.text);
    for (let i = 0; i < 1200; i++) {
      const r = await api.http
        .get('/api/v1/pipeline/status')
        .set('x-api-key', keys.a)
        .query({ pipelinetoken: token, withrollup: 'true' });
      if (r.body?.rollup?.allDone) break;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    const count = async () =>
      Number((await pg.query(`SELECT count(*) AS n FROM "t_${tenantA}".orders`)).rows[0].n);
    expect(await count()).toBe(2);

    const forbidden = await api.http
      .delete(`/api/v1/pipeline/jobs/${token}/rows`)
      .set('x-api-key', keys.aLoader)
      .expect(403);
    expect(forbidden.body.message).toMatch(/pipeline:delete/);
    const elsewhere = await api.http
      .delete(`/api/v1/pipeline/jobs/${token}/rows`)
      .set('x-api-key', keys.b)
      .expect(404);
    expect(elsewhere.body.code).toBe('pipeline.job_not_found');
    expect(await count()).toBe(2);

    const removed = await api.http
      .delete(`/api/v1/pipeline/jobs/${token}/rows`)
      .set('x-api-key', keys.a)
      .expect(200);
    expect(removed.body).toEqual({ status: 'ok', pipelineToken: token, removed: { postgres: 2 } });
    expect(await count()).toBe(0);
  }, 120_000);
});
