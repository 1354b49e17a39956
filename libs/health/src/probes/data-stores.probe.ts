import { Client as PgClient, ClientConfig } from 'pg';
import Redis from 'ioredis';
import { Client as MinioClient } from 'minio';

function onAbort(signal: AbortSignal, close: () => unknown): void {
  signal.addEventListener('abort', () => void Promise.resolve(close()).catch(() => undefined), {
    once: true,
  });
}

export async function probePostgres(
  config: ClientConfig,
  timeoutMs: number,
  signal: AbortSignal,
  sql = 'SELECT 1',
): Promise<unknown[]> {
  const client = new PgClient({
    ...config,
    connectionTimeoutMillis: timeoutMs,
    statement_timeout: timeoutMs,
  });
  onAbort(signal, () => client.end());
  try {
    await client.connect();
    return (await client.query(sql)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function probeRedis(url: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // ioredis reports the cause (e.g. ECONNREFUSED) on 'error' and rejects with a generic message.
  let cause: Error | null = null;
  redis.on('error', (err: Error) => (cause ??= err));
  onAbort(signal, () => redis.disconnect());
  try {
    await redis.connect().catch((err: unknown) => {
      throw cause ?? err;
    });
    const pong = await redis.ping();
    if (pong !== 'PONG') throw new Error(`unexpected PING answer ${pong}`);
  } finally {
    redis.disconnect();
  }
}

export async function probeMongo(uri: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
  // Under our own deadline, so the driver's reason (e.g. ECONNREFUSED) wins over "no answer".
  const driverTimeout = Math.max(100, Math.floor(timeoutMs * 0.75));
  // mongoose (its driver) loads on the first probe, not with every process that never asks.
  const { MongoClient } = (await import('mongoose')).mongo;
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: driverTimeout,
    connectTimeoutMS: driverTimeout,
  });
  onAbort(signal, () => client.close(true));
  try {
    await client.connect();
    await client.db('admin').command({ ping: 1 });
  } finally {
    // Closing waits for the driver's monitors; the answer must not.
    void client.close(true).catch(() => undefined);
  }
}

export interface ObjectStoreSettings {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  region: string;
}

export async function probeObjectStore(s: ObjectStoreSettings, signal: AbortSignal): Promise<void> {
  const u = new URL(s.endpoint);
  const useSSL = u.protocol === 'https:';
  const client = new MinioClient({
    endPoint: u.hostname,
    port: u.port ? Number(u.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: s.accessKey,
    secretKey: s.secretKey,
    region: s.region,
  });
  const aborted = new Promise<never>((_, reject) =>
    signal.addEventListener('abort', () => reject(new Error('probe aborted')), { once: true }),
  );
  await Promise.race([client.listBuckets(), aborted]);
}
