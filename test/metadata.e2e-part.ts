import { mongo } from 'mongoose';
import { Client } from 'pg';
import { TestApi, startApi } from './support/apps';
import { issueKey, newBootstrapKey } from './support/auth';
import { TEST_DATABASE_URL, TEST_MONGODB_URI, uniqueEnvironment } from './support/env';

describe('metadata discovery (real Postgres and FerretDB)', () => {
  const env = uniqueEnvironment('meta');
  const schema = `meta_${env.replace(/[^a-z0-9]/g, '_')}`;
  const mongoDb = schema;
  const boot = newBootstrapKey();
  let api: TestApi;
  let pg: Client;
  let client: mongo.MongoClient;
  const get = (path: string, query: Record<string, string> = {}) =>
    api.http.get(`/api/v1/metadata/${path}`).query(query).set('x-api-key', boot);

  beforeAll(async () => {
    api = await startApi({
      TAPYARD_ENV: env,
      MONGODB_URI: TEST_MONGODB_URI,
      USE_API_KEYS: 'true',
      TAPYARD_BOOTSTRAP_API_KEY: boot,
    });
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await pg.query(`CREATE SCHEMA ${schema}`);
    await pg.query(`CREATE TABLE ${schema}.plain (id integer, name text, amount numeric(10,2))`);
    await pg.query(`CREATE TABLE ${schema}.vecs (id integer, embedding real[])`);
    client = await new mongo.MongoClient(TEST_MONGODB_URI).connect();
    await client.db(mongoDb).collection('alpha').insertOne({ x: 1 });
    await client.db(mongoDb).collection('beta').insertOne({ x: 2 });
  });
  afterAll(async () => {
    await pg.query(`DROP SCHEMA ${schema} CASCADE`);
    await pg.end();
    await client.db(mongoDb).dropDatabase();
    await client.close();
    await api.close();
  });

  it('lists PostgreSQL databases, and schemas without system or Tapyard schemas', async () => {
    const dbs = (await get('postgres/databases').expect(200)).body as string[];
    expect(dbs).toEqual(expect.arrayContaining(['postgres', 'tapyard_test']));
    expect(dbs).not.toContain('template0');
    const schemas = (await get('postgres/schemas').expect(200)).body as string[];
    expect(schemas).toEqual(expect.arrayContaining(['public', schema]));
    for (const hidden of ['information_schema', 'pg_catalog', 'pg_toast', 'tapyard', 'tapyard_meta']) {
      expect(schemas).not.toContain(hidden);
    }
    expect((await get('postgres/schemas', { database: 'postgres' }).expect(200)).body).toContain('public');
    const missing = await get('postgres/schemas', { database: 'no_such_db' }).expect(404);
    expect(missing.body.message).toBe("PostgreSQL database 'no_such_db' does not exist");
  });

  it('lists tables with vectorOnly semantics and columns with their types', async () => {
    expect((await get('postgres/tables', { schema }).expect(200)).body).toEqual(['plain']);
    expect((await get('postgres/tables', { schema, vectorOnly: 'false' }).expect(200)).body).toEqual([
      'plain',
    ]);
    expect((await get('postgres/tables', { schema, vectorOnly: 'true' }).expect(200)).body).toEqual(['vecs']);
    const bad = await get('postgres/tables', { schema, vectorOnly: 'maybe' }).expect(400);
    expect(bad.body.message).toMatch(/vectorOnly must be true or false/);
    expect((await get('postgres/columns', { schema, table: 'plain' }).expect(200)).body).toEqual([
      { name: 'id', type: 'integer' },
      { name: 'name', type: 'text' },
      { name: 'amount', type: 'numeric(10,2)' },
    ]);
    await get('postgres/columns', { schema, table: 'nope' }).expect(404);
    await get('postgres/columns', { schema }).expect(400);
    // Tapyard's own metadata (secrets, users) is not discoverable.
    await get('postgres/columns', { schema: 'tapyard', table: 'secrets' }).expect(404);
  });

  it('lists MongoDB databases and collections', async () => {
    const dbs = (await get('mongodb/databases').expect(200)).body as string[];
    expect(dbs).toContain(mongoDb);
    for (const hidden of ['admin', 'config', 'local']) expect(dbs).not.toContain(hidden);
    expect((await get('mongodb/collections', { database: mongoDb }).expect(200)).body).toEqual([
      'alpha',
      'beta',
    ]);
    const all = (await get('mongodb/collections').expect(200)).body as string[];
    expect(all).toEqual(expect.arrayContaining([`${mongoDb}.alpha`, `${mongoDb}.beta`]));
    await get('mongodb/collections', { database: 'nope_db' }).expect(404);
  });

  it('scopes discovery by database for a scoped key', async () => {
    const key = await issueKey(api.http, boot, 'meta-reader', {
      capabilities: [`metadata:read:database=tapyard_test`, `metadata:read:database=${mongoDb}`],
    });
    const dbs = await api.http.get('/api/v1/metadata/postgres/databases').set('x-api-key', key).expect(200);
    expect(dbs.body).toEqual(['tapyard_test']);
    await api.http
      .get('/api/v1/metadata/postgres/tables')
      .query({ schema })
      .set('x-api-key', key)
      .expect(200);
    await api.http
      .get('/api/v1/metadata/postgres/schemas')
      .query({ database: 'postgres' })
      .set('x-api-key', key)
      .expect(404);
    const mongoDbs = await api.http
      .get('/api/v1/metadata/mongodb/databases')
      .set('x-api-key', key)
      .expect(200);
    expect(mongoDbs.body).toEqual([mongoDb]);
  });

  it('vector-store listings are [] when not configured, 503 when the address is refused', async () => {
    for (const path of [
      'qdrant/collections',
      'weaviate/classes',
      'milvus/collections',
      'chroma/collections',
    ]) {
      expect((await get(path).expect(200)).body).toEqual([]);
    }
    await api.http
      .put('/api/v1/secrets/chroma')
      .set('x-api-key', boot)
      .send({ url: 'http://127.0.0.1:1' })
      .expect(200);
    // Configured, but at a loopback address the operator did not allow (TAP_EGRESS_ALLOW).
    const res = await get('chroma/collections').expect(503);
    expect(res.body.message).toMatch(/refused by the egress policy/);
  });

  it('answers 503 naming MongoDB when it is not configured', async () => {
    const bare = await startApi({ TAPYARD_ENV: uniqueEnvironment('meta-nomongo') });
    try {
      const res = await bare.http.get('/api/v1/metadata/mongodb/databases').expect(503);
      expect(res.body.message).toMatch(/MongoDB is not configured \(MONGODB_URI\)/);
    } finally {
      await bare.close();
    }
  });
});
