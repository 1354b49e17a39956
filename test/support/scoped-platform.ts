import { mongo } from 'mongoose';
import { Pool } from 'pg';
import { TestApi, TestWorker, startApi, startWorker } from './apps';
import { issueKey } from './auth';
import { TEST_DATABASE_URL, TEST_MONGODB_URI, TEST_OBJECT_STORE } from './env';
import { closedPort } from './net';

/** What a catalog-a key holds in the suites on where pipelines may load: its pipelines and their jobs. */
export const CATALOG_A = [
  'pipeline:read:catalog=a',
  'pipeline:update:catalog=a',
  'pipeline:upload:catalog=a',
  'job:read:catalog=a',
];

/** A real API (on a port) and worker with API keys on, a PostgreSQL schema and a MongoDB database of the suite's own. */
export interface ScopedPlatform {
  api: TestApi;
  worker: TestWorker;
  /** The API's `/api/v1` address on its port. */
  base: string;
  pg: Pool;
  mongoClient: mongo.MongoClient;
  pgDatabase: string;
  /** A key of `keyCapabilities` (CATALOG_A unless given), named `team-a`. */
  keyA: string;
  stop(): Promise<void>;
}

export async function startScopedPlatform(o: {
  env: string;
  admin: string;
  schema: string;
  mongoDb: string;
  flags?: Record<string, string>;
  keyCapabilities?: string[];
}): Promise<ScopedPlatform> {
  const port = await closedPort();
  const flags = {
    TAPYARD_ENV: o.env,
    ...TEST_OBJECT_STORE,
    MONGODB_URI: TEST_MONGODB_URI,
    USE_API_KEYS: 'true',
    TAPYARD_BOOTSTRAP_API_KEY: o.admin,
    PORT: String(port),
    HOST: '127.0.0.1',
    ...o.flags,
  };
  const api = await startApi(flags);
  await api.app.listen(port, '127.0.0.1');
  const worker = await startWorker(flags);
  const pg = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  await pg.query(`CREATE SCHEMA IF NOT EXISTS "${o.schema}"`);
  const mongoClient = await new mongo.MongoClient(TEST_MONGODB_URI).connect();
  const keyA = await issueKey(api.http, o.admin, 'team-a', { capabilities: o.keyCapabilities ?? CATALOG_A });
  return {
    api,
    worker,
    base: `http://127.0.0.1:${port}/api/v1`,
    pg,
    mongoClient,
    pgDatabase: api.config.database.name,
    keyA,
    stop: async () => {
      await pg.query(`DROP SCHEMA IF EXISTS "${o.schema}" CASCADE`);
      await pg.end();
      await mongoClient
        .db(o.mongoDb)
        .dropDatabase()
        .catch(() => undefined);
      await mongoClient.close();
      await worker.close();
      await api.close();
    },
  };
}
