import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCAL_MONGODB_URI, LOCAL_OBJECT_STORE, LOCAL_REDIS_URL, localDatabaseUrl } from './local-peers';

/** The local peers of scripts/services, with the credentials it generated (or TEST_* overrides). */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? localDatabaseUrl('tapyard_test');
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? LOCAL_REDIS_URL;
export const TEST_MASTER_KEY = 'a1'.repeat(32);
/** MinIO from scripts/services. */
export const TEST_OBJECT_STORE = {
  OBJECT_STORE_ENDPOINT: process.env.TEST_OBJECT_STORE_ENDPOINT ?? LOCAL_OBJECT_STORE.OBJECT_STORE_ENDPOINT,
  OBJECT_STORE_ACCESS_KEY:
    process.env.TEST_OBJECT_STORE_ACCESS_KEY ?? LOCAL_OBJECT_STORE.OBJECT_STORE_ACCESS_KEY,
  OBJECT_STORE_SECRET_KEY:
    process.env.TEST_OBJECT_STORE_SECRET_KEY ?? LOCAL_OBJECT_STORE.OBJECT_STORE_SECRET_KEY,
};
/** FerretDB from scripts/services (or any MongoDB-wire server). */
export const TEST_MONGODB_URI = process.env.TEST_MONGODB_URI ?? LOCAL_MONGODB_URI;

/** A fresh environment name per suite: suites isolate themselves and run in any order. */
export function uniqueEnvironment(label: string): string {
  const environment = `t-${label}-${randomBytes(4).toString('hex')}`.toLowerCase().slice(0, 40);
  // The e2e project's environment (test/environment.js) removes their buckets and Redis keys when the file is done.
  const g = globalThis as {
    __tapyardEnvironments?: { store: typeof TEST_OBJECT_STORE; redis: string; environments: string[] };
  };
  (g.__tapyardEnvironments ??= {
    store: TEST_OBJECT_STORE,
    redis: TEST_REDIS_URL,
    environments: [],
  }).environments.push(environment);
  return environment;
}

/** The environment variables of a test instance; nothing is read from the developer's shell. */
export function testEnv(
  overrides: Record<string, string | undefined> = {},
): Record<string, string | undefined> {
  return {
    TAPYARD_ENV: uniqueEnvironment('x'),
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    TAPYARD_MASTER_KEY: TEST_MASTER_KEY,
    // Uploads, documents and tap records travel between API and workers only through the object store.
    ...TEST_OBJECT_STORE,
    TAPYARD_DATA_DIR: '/nonexistent-tapyard-test-dir',
    LOG_LEVEL: 'debug',
    TAPYARD_SPOOL_DIR: join(tmpdir(), 'tapyard-test-spool'),
    // Shared by every suite: a package set's virtual environment is built once per machine.
    TAP_VENV_DIR: join(tmpdir(), 'tapyard-test-venvs'),
    ...overrides,
  };
}
