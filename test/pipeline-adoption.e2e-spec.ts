import { mongo } from 'mongoose';
import { Pool } from 'pg';
import { quoteIdent } from '@tapyard/core';
import type { TestApi } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { uniqueEnvironment } from './support/env';
import { keyed } from './support/ingest';
import { CATALOG_A, ScopedPlatform, startScopedPlatform } from './support/scoped-platform';
import { peerAllowList, vectorPeerFields } from './support/vector-peers';

/**
 * API audit: a table or collection that no pipeline claims (made by a DBA or another application, or
 * left by a pipeline deleted without its data) could be named by any scoped key allowed to save a
 * pipeline, and `replace` emptied it on the first load. A pipeline saved without unscoped
 * pipeline:update now loads only into places that are new or that a pipeline of its environment
 * created; an existing unclaimed one fails the job before anything is written, until an admin saves the
 * pipeline. API keys on; real API and worker, PostgreSQL, FerretDB (MongoDB wire).
 */
describe('a table or collection no pipeline created', () => {
  const env = uniqueEnvironment('adoption');
  const schema = `adopt_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const mongoDb = schema;
  const admin = newBootstrapKey();
  let api: TestApi;
  let pg: Pool;
  let mongoClient: mongo.MongoClient;
  /** A catalog-scoped key: saves, loads and watches catalog a's pipelines. */
  let keyA: string;
  let pgDatabase: string;

  const fields = { fields: [{ name: 'n', type: 'int' }] };
  const pgPipeline = (name: string, table: string, more: Record<string, unknown> = {}) => ({
    name,
    catalog: 'a',
    source: { fileAttributes: { format: 'csv' }, schemaProperties: fields },
    destination: { database: { schema, table }, writeMode: 'replace' },
    ...more,
  });
  const mongoPipeline = (name: string, collection: string) => ({
    name,
    catalog: 'a',
    source: { fileAttributes: { format: 'csv' }, schemaProperties: fields },
    destination: {
      database: { usePostgres: false, dbName: mongoDb, table: collection },
      writeMode: 'replace',
    },
  });
  const refusal = (pipeline: string, where: string) =>
    `pipeline '${pipeline}' may not load into ${where}: it exists and no pipeline of this environment created it, ` +
    `and '${pipeline}' was saved without unscoped pipeline:update; an admin (unscoped pipeline:update) saving the ` +
    'pipeline, even unchanged, lets it load there';

  const { post, load } = keyed(() => api.http);
  const rows = async (table: string) =>
    (await pg.query(`SELECT n FROM "${schema}"."${table}" ORDER BY n`)).rows.map((r: { n: number }) => r.n);
  const pgTable = (table: string) => `PostgreSQL table ${pgDatabase}.${schema}.${table}`;
  /** A table made outside Tapyard, as a DBA would, holding `values`. */
  async function dbaTable(table: string, values: number[]): Promise<void> {
    await pg.query(`CREATE TABLE "${schema}"."${table}" (n integer)`);
    for (const v of values) await pg.query(`INSERT INTO "${schema}"."${table}" (n) VALUES ($1)`, [v]);
  }

  let platform: ScopedPlatform;
  beforeAll(async () => {
    platform = await startScopedPlatform({ env, admin, schema, mongoDb });
    ({ api, pg, mongoClient, pgDatabase, keyA } = platform);
  }, 90_000);

  afterAll(() => platform.stop());

  it("fails a scoped key's replace into a DBA's table before writing, until an admin saves the pipeline", async () => {
    await dbaTable('dba_rows', [7, 8]);
    const wipe = pgPipeline('a-wipe', 'dba_rows');
    const saved = await post(keyA, '/pipeline', wipe).expect(200);

    const job = await load(keyA, 'a-wipe', 'n\n1\n');
    expect(job.status).toBe('error');
    expect(job.lastError?.description).toBe(refusal('a-wipe', pgTable('dba_rows')));
    expect(await rows('dba_rows')).toEqual([7, 8]);

    // An admin saving it unchanged (no new version) lets it load there.
    const cleared = await post(admin, '/pipeline', wipe).expect(200);
    expect(cleared.body.version).toBe(saved.body.version);
    expect((await load(keyA, 'a-wipe', 'n\n1\n')).status).toBe('success');
    expect(await rows('dba_rows')).toEqual([1]);

    // A scoped change of anything but the destination keeps the admin's leave.
    await post(keyA, '/pipeline', { ...wipe, description: 'changed' }).expect(200);
    expect((await load(keyA, 'a-wipe', 'n\n2\n')).status).toBe('success');
    expect(await rows('dba_rows')).toEqual([2]);
    // A scoped change of the destination (its write mode here) makes it the scoped key's pipeline again.
    const appending = {
      ...wipe,
      description: 'changed',
      destination: { ...wipe.destination, writeMode: 'append' },
    };
    await post(keyA, '/pipeline', appending).expect(200);
    expect((await load(keyA, 'a-wipe', 'n\n3\n')).lastError?.description).toBe(
      refusal('a-wipe', pgTable('dba_rows')),
    );
    expect(await rows('dba_rows')).toEqual([2]);
    // An admin's change lets it load.
    await post(admin, '/pipeline', { ...appending, description: 'changed by an admin' }).expect(200);
    expect((await load(keyA, 'a-wipe', 'n\n4\n')).status).toBe('success');
    expect(await rows('dba_rows')).toEqual([2, 4]);
  });

  it("refuses a DBA's table made while a scoped key's first load waited for the table's own DDL lock", async () => {
    await post(keyA, '/pipeline', pgPipeline('a-race', 'dba_race')).expect(200);
    const holder = await pg.connect();
    const key = `${quoteIdent(schema)}.${quoteIdent('dba_race')}`;
    try {
      // The table's own lock (pg-tables.ts: 7421003, hash of its name), held as a concurrent creation would.
      await holder.query('SELECT pg_advisory_lock(7421003, hashtext($1))', [key]);
      const pending = load(keyA, 'a-race', 'n\n1\n');
      // The job found the table missing (nothing to refuse yet) and waits for the lock.
      await new Promise((r) => setTimeout(r, 500));
      await dbaTable('dba_race', [7]);
      await holder.query('SELECT pg_advisory_unlock(7421003, hashtext($1))', [key]);
      const job = await pending;
      expect(job.status).toBe('error');
      expect(job.lastError?.description).toBe(refusal('a-race', pgTable('dba_race')));
      expect(await rows('dba_race')).toEqual([7]);
    } finally {
      await holder.query('SELECT pg_advisory_unlock_all()');
      holder.release();
    }
  });

  it("loads an admin's pipeline into a DBA's table as before", async () => {
    await dbaTable('dba_admin', [5]);
    await post(admin, '/pipeline', pgPipeline('admin-wipe', 'dba_admin')).expect(200);
    expect((await load(admin, 'admin-wipe', 'n\n6\n')).status).toBe('success');
    expect(await rows('dba_admin')).toEqual([6]);
  });

  it('refuses a DBA table beside a fresh one: the rejects table counts too', async () => {
    await pg.query(`CREATE TABLE "${schema}"."fresh_rows_rejects" (note text)`);
    await post(keyA, '/pipeline', pgPipeline('a-fresh', 'fresh_rows')).expect(200);
    const job = await load(keyA, 'a-fresh', 'n\n1\n');
    expect(job.lastError?.description).toBe(refusal('a-fresh', pgTable('fresh_rows_rejects')));
    expect((await pg.query(`SELECT to_regclass($1) AS t`, [`"${schema}".fresh_rows`])).rows[0].t).toBeNull();
  });

  it('loads into a table its own earlier pipeline created, not while that pipeline loads elsewhere, nor once it is deleted without its data', async () => {
    await post(keyA, '/pipeline', pgPipeline('a-maker', 'made_rows')).expect(200);
    expect((await load(keyA, 'a-maker', 'n\n1\n')).status).toBe('success');
    await post(keyA, '/pipeline', pgPipeline('a-reuse', 'made_rows')).expect(200);
    expect((await load(keyA, 'a-reuse', 'n\n2\n')).status).toBe('success');
    expect(await rows('made_rows')).toEqual([2]);

    // Its creator pointed elsewhere answers for it no more: adopting it takes an admin's save.
    await post(keyA, '/pipeline', pgPipeline('a-maker', 'made_elsewhere')).expect(200);
    expect((await load(keyA, 'a-reuse', 'n\n4\n')).lastError?.description).toBe(
      refusal('a-reuse', pgTable('made_rows')),
    );
    await post(keyA, '/pipeline', pgPipeline('a-maker', 'made_rows')).expect(200);
    expect((await load(keyA, 'a-reuse', 'n\n2\n')).status).toBe('success');

    // Left behind: no pipeline claims it any more.
    await api.http
      .delete('/api/v1/pipeline')
      .query({ pipeline: 'a-maker' })
      .set('x-api-key', admin)
      .expect((res) => expect(res.status).toBeLessThan(300));
    const job = await load(keyA, 'a-reuse', 'n\n3\n');
    expect(job.lastError?.description).toBe(refusal('a-reuse', pgTable('made_rows')));
    expect(await rows('made_rows')).toEqual([2]);
  });

  it("refuses a scoped key's replace into a collection made with the driver, leaving its documents", async () => {
    const people = mongoClient.db(mongoDb).collection<{ _id: string; n: number }>('dba_people');
    await people.insertMany([
      { _id: 'x', n: 7 },
      { _id: 'y', n: 8 },
    ]);
    await post(keyA, '/pipeline', mongoPipeline('a-people', 'dba_people')).expect(200);
    const job = await load(keyA, 'a-people', 'n\n1\n');
    expect(job.status).toBe('error');
    expect(job.lastError?.description).toBe(refusal('a-people', `MongoDB collection ${mongoDb}.dba_people`));
    expect(await people.find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 'x', n: 7 },
      { _id: 'y', n: 8 },
    ]);

    // A collection its pipeline created is its own to load again.
    await post(keyA, '/pipeline', mongoPipeline('a-own', 'own_people')).expect(200);
    expect((await load(keyA, 'a-own', 'n\n1\n')).status).toBe('success');
    expect((await load(keyA, 'a-own', 'n\n2\n')).status).toBe('success');
    const own = await mongoClient.db(mongoDb).collection('own_people').find().toArray();
    expect(own.map((d) => d.n)).toEqual([2]);

    // An admin's save lets the first load there.
    await post(admin, '/pipeline', mongoPipeline('a-people', 'dba_people')).expect(200);
    expect((await load(keyA, 'a-people', 'n\n1\n')).status).toBe('success');
    expect((await people.find().toArray()).map((d) => d.n)).toEqual([1]);
  });
});

/**
 * The same rule for the containers document pipelines load into: a pgvector table made with plain SQL
 * and a Qdrant collection made with Qdrant's own HTTP API. A document load deletes the chunks of its
 * document's uri that it no longer makes, so a scoped key's upload into a container another tool
 * fills removed that tool's points for the uri, and added its own beside them.
 */
describe('a vector-store container no pipeline created', () => {
  const env = uniqueEnvironment('adoption-vs');
  const schema = `adopt_${env.replace(/[^a-z0-9]/g, '_')}`.slice(0, 60);
  const collection = (base: string) => `${base}_${env.replace(/[^a-z0-9]/g, '').slice(-10)}`;
  const admin = newBootstrapKey();
  const DIM = 384;
  const doc = '# Meeting rooms\n\nThe large meeting room is on the third floor, beside the kitchen.';
  let api: TestApi;
  let pgv: Pool;
  let qdrant: string;
  let keyA: string;
  const qdrantMade: string[] = [];

  const { post, load } = keyed(() => api.http);
  const docPipeline = (name: string, store: 'pgvector' | 'qdrant', c: string) => ({
    name,
    catalog: 'a',
    source: { fileAttributes: { unstructuredAttributes: {} }, schemaProperties: { fields: [] } },
    destination: { vectorStore: { store, collection: c, ...(store === 'pgvector' ? { schema } : {}) } },
  });
  const upload = (key: string, pipeline: string) => load(key, pipeline, doc, 'rooms.md');
  const refusal = (pipeline: string, where: string) =>
    `pipeline '${pipeline}' may not load into ${where}: it exists and no pipeline of this environment created it, ` +
    `and '${pipeline}' was saved without unscoped pipeline:update; an admin (unscoped pipeline:update) saving the ` +
    'pipeline, even unchanged, lets it load there';
  const vector = (i: number) => `[${Array.from({ length: DIM }, (_, j) => (j === i ? 1 : 0)).join(',')}]`;
  /** Another tool's chunks: one of the uri the test uploads (a load would remove it as stale), one not. */
  const foreign = [
    { id: '00000000-0000-4000-8000-000000000001', uri: 'upload://rooms.md' },
    { id: '00000000-0000-4000-8000-000000000002', uri: 'elsewhere://kept' },
  ];

  async function qdrantCall<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${qdrant}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`qdrant answered ${res.status} to ${method} ${path}: ${text}`);
    return (JSON.parse(text) as { result: T }).result;
  }
  const pgvIds = async (table: string) =>
    (await pgv.query(`SELECT id FROM "${schema}"."${table}" ORDER BY id`)).rows.map(
      (r: { id: string }) => r.id,
    );
  const qdrantIds = async (c: string) =>
    (
      await qdrantCall<{ points: { id: string }[] }>('POST', `/collections/${c}/points/scroll`, {
        limit: 100,
        with_payload: false,
        with_vector: false,
      })
    ).points
      .map((p) => p.id)
      .sort();

  /** Another tool's Qdrant collection `c`, with its points (`foreign`). */
  async function madeElsewhere(c: string): Promise<void> {
    await qdrantCall('PUT', `/collections/${c}`, { vectors: { size: DIM, distance: 'Cosine' } });
    await qdrantCall('PUT', `/collections/${c}/points?wait=true`, {
      points: foreign.map((f, i) => ({
        id: f.id,
        vector: JSON.parse(vector(i)) as number[],
        payload: { text: 'theirs', metadata: { uri: f.uri } },
      })),
    });
  }

  let platform: ScopedPlatform;
  beforeAll(async () => {
    const pgvFields = vectorPeerFields('pgvector');
    const qdrantFields = vectorPeerFields('qdrant');
    qdrant = new URL(qdrantFields.url).origin;
    platform = await startScopedPlatform({
      env,
      admin,
      schema,
      mongoDb: schema,
      flags: { PGVECTOR_URL: pgvFields.connectionString, TAP_EGRESS_ALLOW: peerAllowList(qdrantFields) },
      keyCapabilities: [...CATALOG_A, 'document:upload'],
    });
    ({ api, keyA } = platform);
    await api.http.put('/api/v1/secrets/qdrant').set('x-api-key', admin).send(qdrantFields).expect(200);
    pgv = new Pool({ connectionString: pgvFields.connectionString, max: 2 });
    await pgv.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  }, 20 * 60_000);

  afterAll(async () => {
    await pgv?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pgv?.end();
    for (const c of qdrantMade) await qdrantCall('DELETE', `/collections/${c}`).catch(() => undefined);
    await platform?.stop();
  });

  it("fails a scoped key's upload into a pgvector table made with SQL, leaving its rows, until an admin saves the pipeline", async () => {
    await pgv.query(
      `CREATE TABLE "${schema}"."dba_docs" (id uuid PRIMARY KEY, content text NOT NULL, metadata jsonb NOT NULL, embedding vector(${DIM}) NOT NULL)`,
    );
    for (const [i, f] of foreign.entries()) {
      await pgv.query(`INSERT INTO "${schema}"."dba_docs" VALUES ($1, 'theirs', $2, $3)`, [
        f.id,
        JSON.stringify({ uri: f.uri }),
        vector(i),
      ]);
    }
    const pipeline = docPipeline('a-docs', 'pgvector', 'dba_docs');
    await post(keyA, '/pipeline', pipeline).expect(200);

    const job = await upload(keyA, 'a-docs');
    expect(job.status).toBe('error');
    expect(job.lastError?.description).toBe(refusal('a-docs', `pgvector container ${schema}.dba_docs`));
    expect(await pgvIds('dba_docs')).toEqual(foreign.map((f) => f.id));

    // An admin saving it unchanged lets it load there (its chunks of the uri replace the old ones).
    await post(admin, '/pipeline', pipeline).expect(200);
    expect((await upload(keyA, 'a-docs')).status).toBe('success');
    const after = await pgvIds('dba_docs');
    expect(after).toContain(foreign[1].id);
    expect(after).not.toContain(foreign[0].id);
    expect(after.length).toBeGreaterThan(1);
  });

  it("loads a scoped key's pipeline into a table it created, and another of the environment's pipelines there too", async () => {
    await post(keyA, '/pipeline', docPipeline('a-own', 'pgvector', 'own_docs')).expect(200);
    expect((await upload(keyA, 'a-own')).status).toBe('success');
    expect((await upload(keyA, 'a-own')).status).toBe('success');
    await post(keyA, '/pipeline', docPipeline('a-beside', 'pgvector', 'own_docs')).expect(200);
    expect((await upload(keyA, 'a-beside')).status).toBe('success');
    expect((await pgvIds('own_docs')).length).toBeGreaterThan(0);
  });

  it("refuses another catalog's key a container catalog a's pipeline loads into, as its store names it", async () => {
    await post(keyA, '/pipeline', docPipeline('a-shared', 'qdrant', collection('kept'))).expect(200);
    const keyB = await issueKey(api.http, admin, 'team-b', {
      capabilities: ['pipeline:read:catalog=b', 'pipeline:update:catalog=b', 'document:upload'],
    });
    for (const c of [collection('kept'), collection('kept').toUpperCase()]) {
      const res = await post(keyB, '/pipeline', {
        ...docPipeline('b-shared', 'qdrant', c),
        catalog: 'b',
      });
      if (c === collection('kept')) {
        expect({ status: res.status, message: res.body.message }).toEqual({
          status: 403,
          message:
            `'team-b' lacks the capability pipeline:update for qdrant container ${collection('kept')}: ` +
            'a pipeline outside its scope loads there',
        });
      } else expect(res.status).toBe(200); // Qdrant's names are case-sensitive: another collection.
    }
    // Weaviate's classes are not: `Handbook` and `handbook` are one class, and one place.
    await post(keyA, '/pipeline', {
      ...docPipeline('a-class', 'qdrant', 'x'),
      destination: { vectorStore: { store: 'weaviate', collection: 'handbook-a' } },
    }).expect(200);
    const res = await post(keyB, '/pipeline', {
      ...docPipeline('b-class', 'qdrant', 'x'),
      catalog: 'b',
      destination: { vectorStore: { store: 'weaviate', collection: 'Handbook_a' } },
    });
    expect({ status: res.status, message: res.body.message }).toEqual({
      status: 403,
      message:
        "'team-b' lacks the capability pipeline:update for weaviate container Handbook_a: a pipeline outside its scope loads there",
    });
  });

  it("fails a scoped key's upload into a Qdrant collection made with its HTTP API, leaving its points, until an admin saves the pipeline", async () => {
    const c = collection('dba');
    qdrantMade.push(c);
    await madeElsewhere(c);
    const pipeline = docPipeline('a-qdrant', 'qdrant', c);
    await post(keyA, '/pipeline', pipeline).expect(200);

    const job = await upload(keyA, 'a-qdrant');
    expect(job.status).toBe('error');
    expect(job.lastError?.description).toBe(refusal('a-qdrant', `qdrant container ${c}`));
    expect(await qdrantIds(c)).toEqual(foreign.map((f) => f.id));

    await post(admin, '/pipeline', pipeline).expect(200);
    expect((await upload(keyA, 'a-qdrant')).status).toBe('success');
    const after = await qdrantIds(c);
    expect(after).toContain(foreign[1].id);
    expect(after).not.toContain(foreign[0].id);
    expect(after.length).toBeGreaterThan(1);
  });

  /**
   * A Qdrant collection `pipeline` created (its first load), which another tool then drops and makes
   * again under the same name, with its own points.
   */
  async function remadeElsewhere(pipeline: string): Promise<string> {
    const c = collection(pipeline.replace(/-/g, '_'));
    qdrantMade.push(c);
    await post(keyA, '/pipeline', docPipeline(pipeline, 'qdrant', c)).expect(200);
    expect((await upload(keyA, pipeline)).status).toBe('success');
    await qdrantCall('DELETE', `/collections/${c}`);
    await madeElsewhere(c);
    return c;
  }

  it('refuses a Qdrant collection its pipeline created once another tool dropped it and made it again', async () => {
    const c = await remadeElsewhere('a-remade');

    // The record of its creation stands, but the collection no longer carries that creation's mark.
    const job = await upload(keyA, 'a-remade');
    expect(job.status).toBe('error');
    expect(job.lastError?.description).toBe(refusal('a-remade', `qdrant container ${c}`));
    expect(await qdrantIds(c)).toEqual(foreign.map((f) => f.id));
  });

  it('takes a record from before marks (unmarked) as it did: its collection counts as created, whatever it carries', async () => {
    const c = await remadeElsewhere('a-legacy');
    // As a container created by an earlier release is recorded: without a mark.
    const { rowCount } = await platform.pg.query(
      `UPDATE tapyard.created_objects SET marked = false WHERE environment = $1 AND store = 'vectorstore' AND name = $2`,
      [env, c],
    );
    expect(rowCount).toBe(1);
    expect((await upload(keyA, 'a-legacy')).status).toBe('success');
  });

  it('leaves a Qdrant collection made again by another tool when its pipeline is deleted with its data', async () => {
    const c = await remadeElsewhere('a-gone');

    const res = await api.http
      .delete('/api/v1/pipeline')
      .query({ pipeline: 'a-gone', deleteData: 'true' })
      .set('x-api-key', admin)
      .expect(200);
    expect(res.body.dropped).toEqual([]);
    expect(res.body.skipped).toContainEqual({
      object: `qdrant container ${c}`,
      reason: 'is no longer the container this pipeline created (its creation mark differs): left in place',
    });
    expect(await qdrantIds(c)).toEqual(foreign.map((f) => f.id));
  });

  it('refuses a Qdrant collection whose creating pipeline was deleted without its data', async () => {
    const c = collection('left');
    qdrantMade.push(c);
    await post(keyA, '/pipeline', docPipeline('a-maker', 'qdrant', c)).expect(200);
    expect((await upload(keyA, 'a-maker')).status).toBe('success');
    await post(keyA, '/pipeline', docPipeline('a-reuse', 'qdrant', c)).expect(200);
    expect((await upload(keyA, 'a-reuse')).status).toBe('success');
    const before = await qdrantIds(c);

    await api.http
      .delete('/api/v1/pipeline')
      .query({ pipeline: 'a-maker' })
      .set('x-api-key', admin)
      .expect((res) => expect(res.status).toBeLessThan(300));
    const job = await upload(keyA, 'a-reuse');
    expect(job.lastError?.description).toBe(refusal('a-reuse', `qdrant container ${c}`));
    expect(await qdrantIds(c)).toEqual(before);
  });
});
