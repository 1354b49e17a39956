import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The credentials `scripts/services` generated for the local peers (`$TAPYARD_HOME/credentials.env`),
 * so tests and benchmarks reach them like `npm run up` does. Empty when the file is absent.
 */
export function localCredentials(): Record<string, string> {
  const home = process.env.TAPYARD_HOME ?? join(homedir(), '.cache', 'tapyard');
  let text: string;
  try {
    text = readFileSync(join(home, 'credentials.env'), 'utf8');
  } catch {
    return {};
  }
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]] = m[2];
  }
  return out;
}

const c = localCredentials();
const pgPort = process.env.TAPYARD_PG_PORT ?? '5432';
const pgAuth = `${c.TAPYARD_PG_USER ?? 'postgres'}${c.TAPYARD_PG_PASSWORD ? `:${c.TAPYARD_PG_PASSWORD}` : ''}`;

/** A database of the local Postgres as the platform's role. */
export const localDatabaseUrl = (database: string): string =>
  `postgres://${pgAuth}@127.0.0.1:${pgPort}/${database}`;

export const LOCAL_REDIS_URL = `redis://${c.TAPYARD_REDIS_PASSWORD ? `:${c.TAPYARD_REDIS_PASSWORD}@` : ''}127.0.0.1:${
  process.env.TAPYARD_REDIS_PORT ?? '6379'
}`;

export const LOCAL_OBJECT_STORE = {
  OBJECT_STORE_ENDPOINT: `http://127.0.0.1:${process.env.TAPYARD_MINIO_PORT ?? '9000'}`,
  OBJECT_STORE_ACCESS_KEY: c.TAPYARD_MINIO_USER ?? 'tapyard',
  OBJECT_STORE_SECRET_KEY: c.TAPYARD_MINIO_PASSWORD ?? '',
};

export const LOCAL_MONGODB_URI = `mongodb://127.0.0.1:${process.env.TAPYARD_MONGO_PORT ?? '27017'}`;
