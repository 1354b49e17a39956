import { EnvReader } from './env-reader';

/** The servers the platform itself talks to: its metadata database, Redis, and the default destinations' peers. */
export interface PeersConfig {
  readonly database: {
    readonly url: string;
    readonly name: string;
    readonly poolSize: number;
    /** Further attempts to reach it at boot, 3 s apart, before the process exits naming it. */
    readonly connectRetries: number;
    /** The PostgreSQL server the PostgreSQL destination loads into (default: the metadata server). */
    readonly destinationUrl: string;
    /**
     * COPY streams one append load may use on the destination server (two-phase commit joins them);
     * 1 keeps every load on one connection.
     */
    readonly copyStreams: number;
    /** Bytes a load copies on its first stream before it opens the others: small loads keep one. */
    readonly copyStreamMinBytes: number;
  };
  readonly redis: { readonly url: string };
  readonly mongodb: {
    readonly uri: string | null;
    readonly database: string;
    /** How long the driver looks for a server (and waits for a connection) before a load fails. */
    readonly timeoutMs: number;
  };
  readonly objectStore: {
    readonly endpoint: string | null;
    readonly accessKey: string;
    readonly secretKey: string;
    readonly region: string;
  };
  readonly kafka: { readonly brokers: readonly string[] };
  readonly activemq: { readonly url: string | null; readonly user: string; readonly password: string };
}

export function readPeers(r: EnvReader, environment: string): PeersConfig {
  const databaseUrl = r.url('DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/tapyard', [
    'postgres',
    'postgresql',
  ]);
  const brokers = (r.optional('KAFKA_BROKERS') ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  for (const b of brokers) {
    if (!/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/.test(b))
      r.problems.push(`KAFKA_BROKERS entries must be host:port (got "${b}")`);
  }
  const mongoUri = r.url('MONGODB_URI', null, ['mongodb', 'mongodb+srv']);
  return {
    database: {
      url: databaseUrl ?? '',
      name: r.string('POSTGRES_DATABASE', databaseName(databaseUrl)),
      poolSize: r.int('DATABASE_POOL_SIZE', 10, 1, 200),
      connectRetries: r.int('DATABASE_CONNECT_RETRIES', 9, 0, 1000),
      destinationUrl:
        r.url('POSTGRES_DESTINATION_URL', null, ['postgres', 'postgresql']) ?? databaseUrl ?? '',
      copyStreams: r.int('PG_COPY_STREAMS', 2, 1, 4),
      copyStreamMinBytes: r.int('PG_COPY_STREAM_MIN_BYTES', 8 << 20, 0, 1 << 30),
    },
    redis: { url: r.url('REDIS_URL', 'redis://127.0.0.1:6379', ['redis', 'rediss']) ?? '' },
    mongodb: {
      uri: mongoUri,
      database: r.string('MONGODB_DATABASE', environment),
      timeoutMs: r.int('MONGODB_TIMEOUT_MS', 5000, 100, 600_000),
    },
    objectStore: {
      endpoint: r.url('OBJECT_STORE_ENDPOINT', null, ['http', 'https']),
      accessKey: r.string('OBJECT_STORE_ACCESS_KEY', ''),
      secretKey: r.string('OBJECT_STORE_SECRET_KEY', ''),
      region: r.string('OBJECT_STORE_REGION', 'us-east-1'),
    },
    kafka: { brokers },
    activemq: {
      url: r.url('ACTIVEMQ_URL', null, ['stomp', 'tcp']),
      user: r.string('ACTIVEMQ_USER', ''),
      password: r.string('ACTIVEMQ_PASSWORD', ''),
    },
  };
}

function databaseName(url: string | null): string {
  if (!url) return 'tapyard';
  try {
    return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || 'postgres';
  } catch {
    return 'tapyard';
  }
}
