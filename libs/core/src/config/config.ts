import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { AllowList, Endpoint, parseAllowList, parseEndpoints } from './allow-list';

export type CapabilityEnforcement = 'enforce' | 'log-only';
/** Who may read Swagger UI and the OpenAPI JSON: anyone, any valid key or session, or nobody. */
export type ApiDocsAccess = 'public' | 'authenticated' | 'off';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** AI-written data-quality and transformation scripts (CodeGen), and the code repository. */
export interface CodegenConfig {
  /** Private git remotes the `code-repository` secret may name (everything else private is refused). */
  readonly repositoryAllow: AllowList;
  /** Local clones of code repositories (a cache: deleting it costs one fetch). */
  readonly repositoryCacheDir: string;
  /** Longest a script may take over one batch before the job's stage fails. */
  readonly batchTimeoutMs: number;
  /** Address space of a script's process. */
  readonly memoryBytes: number;
  /** CPU seconds of a script's process over a whole job. */
  readonly cpuSeconds: number;
}

/** The one validated configuration object, built at boot from the environment. */
export interface TapyardConfig {
  readonly version: string;
  readonly port: number;
  readonly host: string;
  /** Express `trust proxy`: which proxies may set X-Forwarded-For/-Proto (client address, TLS). */
  readonly trustProxy: string | null;
  readonly environment: string;
  readonly hosted: boolean;
  readonly dataDir: string;
  readonly logLevel: LogLevel;
  readonly bodyLimitBytes: number;
  readonly uploadLimitBytes: number;
  /**
   * SIGTERM/SIGINT: how long running requests and jobs may take to finish. Past it the API exits 1
   * and a worker hands its still-running jobs back to the queue and exits 0.
   */
  readonly shutdownGraceMs: number;
  readonly healthTimeoutMs: number;
  /** Natural-language SQL: the role generated queries run as, and their statement timeout. */
  readonly query: {
    /** The operator environment's query role; a tenant environment's is its own (tapyard.query_role). */
    readonly role: string;
    readonly timeoutMs: number;
    /** Connections per database for user queries, apart from the platform's own pool. */
    readonly poolSize: number;
    /** work_mem of a user query, in kB (sorts and hashes spill to disk beyond it). */
    readonly workMemKb: number;
    /** Bytes of result rows (as text) one query may return; the server stops sending beyond them. */
    readonly maxResultBytes: number;
  };
  readonly assistant: {
    /** How often the chat stream sends an SSE comment while nothing else is said (long tool calls). */
    readonly keepAliveMs: number;
    /** How long an acting tool call waits for the user's confirmation before it is dropped. */
    readonly actionTtlSeconds: number;
  };
  readonly database: {
    readonly url: string;
    readonly name: string;
    readonly poolSize: number;
    /** The PostgreSQL server the PostgreSQL destination loads into (default: the metadata server). */
    readonly destinationUrl: string;
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
  readonly auth: {
    readonly useUserAuth: boolean;
    readonly useApiKeys: boolean;
    readonly multiTenant: boolean;
    readonly capabilityEnforcement: CapabilityEnforcement;
    /** API_DOCS; by default public only when neither API keys nor user auth is on. */
    readonly apiDocs: ApiDocsAccess;
    /** Accepted as the full-access key `bootstrap` when API keys are on; stored hashed. */
    readonly bootstrapApiKey: string | null;
    /** Password of the `admin` user created when user auth is on and no admin exists. */
    readonly adminPassword: string | null;
    readonly sessionTtlSeconds: number;
    /** Failure counts are forgotten this long after the last failure. */
    readonly loginWindowSeconds: number;
    /** Failures of one account from one address before that pair must wait. */
    readonly loginBackoffAfter: number;
    /** The first wait; it doubles with each further failure of the pair. */
    readonly loginBackoffSeconds: number;
    readonly loginBackoffMaxSeconds: number;
    /** Failures of one account from any addresses before the account must wait. */
    readonly loginAccountBackoffAfter: number;
    /** The account's wait stops doubling here: short, since the owner waits it too. */
    readonly loginAccountBackoffMaxSeconds: number;
    /** Failures from one address, any accounts, before that address waits out the window. */
    readonly loginMaxFailuresPerAddress: number;
    /** How often key `lastUsedAt` marks are written (batched, not one write per request). */
    readonly keyUsageFlushMs: number;
  };
  /** 32-byte AES-256 key; never logged, never returned. */
  readonly masterKey: Buffer;
  readonly worker: {
    readonly concurrency: number;
    readonly lockMs: number;
    /** Times a job may stall workers (its worker died) before it is failed instead of handed on. */
    readonly maxStalls: number;
    /** A stage's thread that makes no progress this long is stopped and the job ends `error`. */
    readonly stageStallMs: number;
    /** CSV_FAST_PATH: clean CSV chunks go to PostgreSQL unparsed (off: every row takes the validating path). */
    readonly csvFastPath: boolean;
    /** The worker's probe and metrics port (`/livez`, `/readyz`, `/metrics`); 0: an ephemeral port. */
    readonly httpPort: number;
    readonly httpHost: string;
  };
  /** This host's own scratch directory: a job's copy of its staged input, archive extraction. Never shared. */
  readonly spoolDir: string;
  /** Inputs staged in the object store (the only file path between hosts). */
  readonly staging: {
    /**
     * STAGING_OBJECT_STORE_ENDPOINT: the store staged inputs go through, when not OBJECT_STORE_ENDPOINT
     * (same credentials); null: that one.
     */
    readonly endpoint: string | null;
    /** STAGING_READ_RETRY_SECONDS: how long a job keeps retrying an object store that fails before it aborts. */
    readonly readRetryMs: number;
    /** STAGING_TTL_HOURS: staged inputs untouched this long (their host died) are swept by a worker. */
    readonly ttlMs: number;
  };
  /** How often a running load reports its progress as a `processing` status entry. */
  readonly progressEveryMs: number;
  /** A load whose destination is unreachable is retried this many times in all, backing off from `delayMs`. */
  readonly loadRetry: { readonly attempts: number; readonly delayMs: number };
  /** How often workers look for objects dropped into the raw bucket; 0 turns polling off. */
  readonly rawPollMs: number;
  readonly taps: TapsConfig;
  /**
   * Private endpoints (`TAP_EGRESS_ALLOW`) that connections made on a caller's behalf may reach: tap
   * scripts through the egress proxy, and services whose address a caller configures (vector stores).
   */
  readonly egressAllow: readonly Endpoint[];
  /** REST sinks: private endpoints they may POST to (everything else private is refused). */
  readonly restSinkAllow: AllowList;
  /** Bounds on sinks (REST, Kafka, ActiveMQ, Snowflake, Databricks), so none can hold a worker for good. */
  readonly sinks: {
    /** Longest a sink waits for one answer: a request, a broker's receipts, a statement. */
    readonly requestTimeoutMs: number;
    /** Longest one job's delivery to one sink may take, from its set-up to its last answer. */
    readonly loadTimeoutMs: number;
    /**
     * Jobs of one environment that may be delivering to sinks at once in a worker process; below
     * WORKER_CONCURRENCY, so slow sinks always leave slots to other pipelines.
     */
    readonly concurrency: number;
  };
  readonly codegen: CodegenConfig;
  /**
   * The operator's pgvector database (`PGVECTOR_URL`), used by environments without a `pgvector`
   * secret: the embedded default vector store that `npm run up` starts. Trusted like DATABASE_URL.
   */
  readonly pgvectorUrl: string | null;
  /** Bounds of document parsing against decompression bombs (see README "Security model"). */
  readonly documents: {
    /** Bytes the parts of a DOCX may inflate to together, and one PDF stream may decode to. */
    readonly maxDecompressedBytes: number;
    /** How many times its compressed size one part of a document may grow to. */
    readonly maxCompressionRatio: number;
    /** Everything a document's parse process may allocate (RLIMIT_DATA). */
    readonly parseMemoryBytes: number;
  };
  /** The built-in offline embedding model's files (`scripts/services up models` lays them out). */
  readonly embeddingModelDir: string;
}

/** How tap scripts run (see README "Taps"). */
export interface TapsConfig {
  /** Base interpreter; per-tap virtual environments are made from it. */
  readonly python: string;
  /** Per-package-set virtual environments, created once and reused. */
  readonly venvDir: string;
  /** `require`: bubblewrap, or runs are refused saying why; `off` (explicit): limits only, host network. */
  readonly sandbox: 'require' | 'off';

  readonly timeoutMs: number;
  readonly cpuSeconds: number;
  readonly memoryBytes: number;
  readonly maxProcesses: number;
  readonly maxLogBytes: number;
  readonly maxOutputBytes: number;
  /** Host uids a root platform hands out, one per run (TAP_SANDBOX_UIDS=first-last). */
  readonly sandboxUids: { readonly first: number; readonly last: number };
  /** How often a worker looks for due schedules; 0 turns scheduling off in that worker. */
  readonly schedulerTickMs: number;
  /**
   * A second manual `run` of a tap within this window is skipped (spec Limits: 5 s). Settable so that
   * suites which only need successive runs need not wait it out; 0 turns the debounce off.
   */
  readonly debounceMs: number;
  /** Scheduled runs one worker executes at once. */
  readonly concurrency: number;
  /** Records after which a run's job starts loading while the script still runs (0: never). */
  readonly streamAfter: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Collects every problem so one boot attempt reports all bad variables at once. */
class EnvReader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  optional(name: string): string | null {
    return this.raw(name) ?? null;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!/^-?\d+$/.test(v) || Number(v) < min || Number(v) > max) {
      this.problems.push(`${name} must be an integer between ${min} and ${max} (got "${v}")`);
      return fallback;
    }
    return Number(v);
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (['true', '1', 'yes'].includes(v)) return true;
    if (['false', '0', 'no'].includes(v)) return false;
    this.problems.push(`${name} must be true or false (got "${v}")`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(v)) {
      this.problems.push(`${name} must be one of ${allowed.join(', ')} (got "${v}")`);
      return fallback;
    }
    return v as T;
  }

  /** `first-last`, both ends included. */
  range(name: string, fallback: { first: number; last: number }, min: number, max: number) {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const m = /^(\d+)\s*-\s*(\d+)$/.exec(v);
    const [first, last] = m ? [Number(m[1]), Number(m[2])] : [NaN, NaN];
    if (!(first >= min && first <= last && last <= max)) {
      this.problems.push(`${name} must be a range first-last between ${min} and ${max} (got "${v}")`);
      return fallback;
    }
    return { first, last };
  }

  size(name: string, fallback: string, min?: string, max?: string): number {
    const v = (this.raw(name) ?? fallback).toLowerCase();
    const m = /^(\d+)\s*(b|kb|mb|gb)?$/.exec(v);
    if (!m) {
      this.problems.push(`${name} must be a size such as 512kb, 10mb or 2gb (got "${v}")`);
      return parseSize(fallback);
    }
    const bytes = Number(m[1]) * SIZE_UNITS[m[2] ?? 'b'];
    if ((min !== undefined && bytes < parseSize(min)) || (max !== undefined && bytes > parseSize(max))) {
      this.problems.push(`${name} must be a size between ${min ?? '0b'} and ${max ?? 'any'} (got "${v}")`);
      return parseSize(fallback);
    }
    return bytes;
  }

  allowList(name: string): AllowList {
    const parsed = parseAllowList(this.raw(name) ?? '');
    if (typeof parsed === 'string') {
      this.problems.push(
        `${name} must be a comma-separated list of hosts, host:port or CIDR ranges (${parsed})`,
      );
      return { endpoints: [], hosts: [], ranges: [] };
    }
    return parsed;
  }

  endpoints(name: string): Endpoint[] {
    const parsed = parseEndpoints(this.raw(name) ?? '');
    if (typeof parsed === 'string') {
      this.problems.push(`${name} must be a comma-separated list of host:port (${parsed})`);
      return [];
    }
    return parsed;
  }

  url(name: string, fallback: string | null, protocols: readonly string[]): string | null {
    const v = this.raw(name) ?? fallback;
    if (v === null) return null;
    try {
      const u = new URL(v);
      if (!protocols.includes(u.protocol.replace(/:$/, ''))) throw new Error('protocol');
      return v;
    } catch {
      // Never echo the value: URLs carry credentials.
      this.problems.push(`${name} must be a URL with scheme ${protocols.join(' or ')}`);
      return fallback;
    }
  }
}

function parseSize(s: string): number {
  const m = /^(\d+)\s*(b|kb|mb|gb)?$/.exec(s.toLowerCase());
  return m ? Number(m[1]) * SIZE_UNITS[m[2] ?? 'b'] : 0;
}

export function parseMasterKey(text: string): Buffer | null {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) {
    const b = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (b.length === 32) return b;
  }
  return null;
}

function readMasterKey(r: EnvReader, dataDir: string): Buffer {
  const inline = r.raw('TAPYARD_MASTER_KEY');
  if (inline !== undefined) {
    const key = parseMasterKey(inline);
    if (!key) r.problems.push('TAPYARD_MASTER_KEY must be 32 bytes as 64 hex characters or base64');
    return key ?? Buffer.alloc(32);
  }
  const file = r.string('TAPYARD_MASTER_KEY_FILE', join(dataDir, 'master.key'));
  if (!existsSync(file)) {
    r.problems.push(
      `TAPYARD_MASTER_KEY is not set and TAPYARD_MASTER_KEY_FILE (${file}) does not exist: ` +
        'set one of them, or run `npm run up`, which generates a key file',
    );
    return Buffer.alloc(32);
  }
  const key = parseMasterKey(readFileSync(file, 'utf8'));
  if (!key)
    r.problems.push(`TAPYARD_MASTER_KEY_FILE (${file}) must hold 32 bytes as 64 hex characters or base64`);
  return key ?? Buffer.alloc(32);
}

function databaseName(url: string | null): string {
  if (!url) return 'tapyard';
  try {
    return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || 'postgres';
  } catch {
    return 'tapyard';
  }
}

/** Builds the config or throws a ConfigError naming every offending variable. */
export function loadConfig(env: Env = process.env): TapyardConfig {
  const r = new EnvReader(env);
  const environment = r.string('TAPYARD_ENV', 'dev');
  if (!/^[a-z][a-z0-9_-]{0,39}$/.test(environment)) {
    r.problems.push(
      `TAPYARD_ENV must start with a lowercase letter and hold only a-z, 0-9, _ and - (max 40; got "${environment}")`,
    );
  }
  const dataDir = r.string('TAPYARD_DATA_DIR', join(homedir(), '.local', 'share', 'tapyard'));
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
  const useUserAuth = r.bool('USE_USER_AUTH', false);
  const useApiKeys = r.bool('USE_API_KEYS', false);
  const workerConcurrency = r.int('WORKER_CONCURRENCY', 4, 1, 256);
  // Renamed: a deployment still setting the old name would silently get the default grace.
  if (r.raw('SHUTDOWN_TIMEOUT_MS') !== undefined)
    r.problems.push('SHUTDOWN_TIMEOUT_MS was replaced by SHUTDOWN_GRACE_SECONDS (seconds, default 30)');

  const config: TapyardConfig = {
    version: r.string('TAPYARD_VERSION', readPackageVersion()),
    port: r.int('PORT', 8080, 1, 65535),
    host: r.string('HOST', '127.0.0.1'),
    trustProxy: r.optional('TRUST_PROXY'),
    environment,
    hosted: r.bool('HOSTED', false),
    dataDir,
    logLevel: r.oneOf('LOG_LEVEL', LOG_LEVELS, 'info'),
    bodyLimitBytes: r.size('BODY_LIMIT', '1mb'),
    uploadLimitBytes: r.size('UPLOAD_LIMIT', '5gb'),
    shutdownGraceMs: r.int('SHUTDOWN_GRACE_SECONDS', 30, 0, 3600) * 1000,
    healthTimeoutMs: r.int('HEALTH_TIMEOUT_MS', 2000, 100, 30000),
    query: {
      role: r.string('QUERY_ROLE', 'tapyard_query'),
      timeoutMs: r.int('QUERY_TIMEOUT_MS', 10000, 100, 600000),
      poolSize: r.int('QUERY_POOL_SIZE', 2, 1, 50),
      workMemKb: Math.floor(r.size('QUERY_WORK_MEM', '16mb', '64kb', '1gb') / 1024),
      maxResultBytes: r.size('QUERY_MAX_RESULT_BYTES', '8mb', '1kb', '256mb'),
    },
    assistant: {
      keepAliveMs: r.int('ASSISTANT_KEEPALIVE_MS', 15000, 100, 120000),
      actionTtlSeconds: r.int('ASSISTANT_ACTION_TTL_SECONDS', 900, 10, 86400),
    },
    database: {
      url: databaseUrl ?? '',
      name: r.string('POSTGRES_DATABASE', databaseName(databaseUrl)),
      poolSize: r.int('DATABASE_POOL_SIZE', 10, 1, 200),
      destinationUrl:
        r.url('POSTGRES_DESTINATION_URL', null, ['postgres', 'postgresql']) ?? databaseUrl ?? '',
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
    auth: {
      useUserAuth,
      useApiKeys,
      multiTenant: r.bool('MULTI_TENANT', false),
      capabilityEnforcement: r.oneOf('CAPABILITY_ENFORCEMENT', ['enforce', 'log-only'] as const, 'enforce'),
      apiDocs: r.oneOf(
        'API_DOCS',
        ['public', 'authenticated', 'off'] as const,
        useUserAuth || useApiKeys ? 'authenticated' : 'public',
      ),
      bootstrapApiKey: r.optional('TAPYARD_BOOTSTRAP_API_KEY'),
      adminPassword: r.optional('TAPYARD_ADMIN_PASSWORD'),
      sessionTtlSeconds: r.int('SESSION_TTL_SECONDS', 8 * 3600, 60, 30 * 86400),
      loginWindowSeconds: r.int('LOGIN_WINDOW_SECONDS', 900, 1, 86400),
      loginBackoffAfter: r.int('LOGIN_BACKOFF_AFTER', 3, 1, 1000),
      loginBackoffSeconds: r.int('LOGIN_BACKOFF_SECONDS', 1, 1, 3600),
      loginBackoffMaxSeconds: r.int('LOGIN_BACKOFF_MAX_SECONDS', 900, 1, 86400),
      loginAccountBackoffAfter: r.int('LOGIN_ACCOUNT_BACKOFF_AFTER', 5, 1, 1000),
      loginAccountBackoffMaxSeconds: r.int('LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS', 5, 1, 300),
      loginMaxFailuresPerAddress: r.int('LOGIN_MAX_FAILURES_PER_ADDRESS', 20, 1, 100000),
      keyUsageFlushMs: r.int('KEY_USAGE_FLUSH_MS', 15000, 100, 3600000),
    },
    masterKey: readMasterKey(r, dataDir),
    worker: {
      concurrency: workerConcurrency,
      lockMs: r.int('WORKER_LOCK_MS', 30000, 1000, 600000),
      maxStalls: r.int('WORKER_MAX_STALLS', 2, 0, 100),
      stageStallMs: r.int('STAGE_STALL_MS', 60000, 100, 24 * 3600000),
      csvFastPath: r.bool('CSV_FAST_PATH', true),
      httpPort: r.int('WORKER_HTTP_PORT', 8081, 0, 65535),
      httpHost: r.string('WORKER_HTTP_HOST', '127.0.0.1'),
    },
    spoolDir: r.string('TAPYARD_SPOOL_DIR', join(dataDir, 'spool')),
    staging: {
      endpoint: r.url('STAGING_OBJECT_STORE_ENDPOINT', null, ['http', 'https']),
      readRetryMs: r.int('STAGING_READ_RETRY_SECONDS', 120, 1, 86400) * 1000,
      ttlMs: r.int('STAGING_TTL_HOURS', 24, 1, 8760) * 3600_000,
    },
    progressEveryMs: r.int('STATUS_PROGRESS_MS', 2000, 10, 3600000),
    rawPollMs: r.int('RAW_POLL_MS', 5000, 0, 3600000),
    loadRetry: {
      attempts: r.int('LOAD_RETRY_ATTEMPTS', 5, 1, 100),
      delayMs: r.int('LOAD_RETRY_DELAY_MS', 2000, 10, 3600000),
    },
    egressAllow: r.endpoints('TAP_EGRESS_ALLOW'),
    restSinkAllow: r.allowList('REST_SINK_ALLOW'),
    sinks: sinkBounds(r, workerConcurrency),
    codegen: {
      repositoryAllow: r.allowList('CODE_REPOSITORY_ALLOW'),
      repositoryCacheDir: r.string('CODE_REPOSITORY_CACHE', join(dataDir, 'git')),
      batchTimeoutMs: r.int('CODEGEN_BATCH_TIMEOUT_MS', 30000, 100, 3600000),
      memoryBytes: r.size('CODEGEN_MEMORY_LIMIT', '512mb'),
      cpuSeconds: r.int('CODEGEN_CPU_SECONDS', 600, 1, 86400),
    },
    pgvectorUrl: r.optional('PGVECTOR_URL') ?? null,
    documents: {
      maxDecompressedBytes: r.size('DOCUMENT_MAX_DECOMPRESSED_BYTES', '256mb', '1mb', '2gb'),
      maxCompressionRatio: r.int('DOCUMENT_MAX_COMPRESSION_RATIO', 200, 10, 10000),
      parseMemoryBytes: r.size('DOCUMENT_PARSE_MEMORY_LIMIT', '1gb', '256mb', '16gb'),
    },
    embeddingModelDir: r.string(
      'EMBEDDING_MODEL_DIR',
      join(r.optional('TAPYARD_HOME') ?? join(homedir(), '.cache', 'tapyard'), 'models', 'all-MiniLM-L6-v2'),
    ),
    taps: {
      // Debian's interpreter when present: built with optimisations (pyenv builds often are not, at
      // half the speed) and readable by the sandbox user.
      python: r.string('TAP_PYTHON', existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'),
      venvDir: r.string('TAP_VENV_DIR', join(dataDir, 'venvs')),
      sandbox: r.oneOf('TAP_SANDBOX', ['require', 'off'] as const, 'require'),

      timeoutMs: r.int('TAP_TIMEOUT_MS', 15 * 60000, 1000, 24 * 3600000),
      cpuSeconds: r.int('TAP_CPU_SECONDS', 600, 1, 86400),
      memoryBytes: r.size('TAP_MEMORY_LIMIT', '1gb'),
      maxProcesses: r.int('TAP_MAX_PROCESSES', 64, 4, 4096),
      maxLogBytes: r.size('TAP_LOG_LIMIT', '256kb'),
      maxOutputBytes: r.size('TAP_OUTPUT_LIMIT', '4gb'),
      sandboxUids: r.range('TAP_SANDBOX_UIDS', { first: 1_000_000_000, last: 1_000_065_535 }, 1, 2 ** 31 - 1),
      schedulerTickMs: r.int('TAP_SCHEDULER_MS', 1000, 0, 3600000),
      debounceMs: r.int('TAP_DEBOUNCE_MS', 5000, 0, 3600000),
      concurrency: r.int('TAP_CONCURRENCY', 2, 1, 64),
      streamAfter: r.int('TAP_STREAM_AFTER', 10000, 0, 100_000_000),
    },
  };
  checkAuth(r, config.auth);
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return Object.freeze(config);
}

function sinkBounds(r: EnvReader, workers: number): TapyardConfig['sinks'] {
  // One slot is always kept from sinks, unless the worker has only one.
  const concurrency = r.int('SINK_CONCURRENCY', Math.max(1, workers - 1), 1, 256);
  if (concurrency > workers) {
    r.problems.push(
      `SINK_CONCURRENCY (${concurrency}) must not exceed WORKER_CONCURRENCY (${workers}): it bounds the worker slots sinks may hold`,
    );
  }
  return {
    requestTimeoutMs: r.int('SINK_REQUEST_TIMEOUT_MS', 30_000, 100, 600_000),
    loadTimeoutMs: r.int('SINK_LOAD_TIMEOUT_MS', 3_600_000, 100, 24 * 3_600_000),
    concurrency,
  };
}

/** Combinations that cannot work; values are never echoed (they are secrets). */
function checkAuth(r: EnvReader, auth: TapyardConfig['auth']): void {
  if (auth.multiTenant && !auth.useApiKeys) {
    r.problems.push(
      'MULTI_TENANT=true needs USE_API_KEYS=true: the tenant of a request is found from its API key',
    );
  }
  if (auth.bootstrapApiKey !== null && auth.bootstrapApiKey.length < 24) {
    r.problems.push('TAPYARD_BOOTSTRAP_API_KEY must be at least 24 characters (use `openssl rand -hex 24`)');
  }
  if (auth.adminPassword !== null && auth.adminPassword.length < 12) {
    r.problems.push('TAPYARD_ADMIN_PASSWORD must be at least 12 characters');
  }
}

function readPackageVersion(): string {
  // dist/libs/core/src/config -> repository root, or libs/core/src/config under ts-jest.
  for (const rel of ['../../../../../package.json', '../../../../package.json']) {
    const p = join(__dirname, rel);
    if (existsSync(p)) {
      const v = (JSON.parse(readFileSync(p, 'utf8')) as { version?: string }).version;
      if (v) return v;
    }
  }
  return '0.0.0';
}
