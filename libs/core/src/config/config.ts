import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { AllowList, ENVIRONMENT_NAME, Endpoint } from './allow-list';
import { AuthConfig, readAuth } from './auth-config';
import { CodegenConfig, readCodegen } from './codegen-config';
import { Env, EnvReader } from './env-reader';
import { readMasterKey } from './master-key';
import { PeersConfig, readPeers } from './peers-config';
import { TapsConfig, readTaps } from './taps-config';
import {
  SinksConfig,
  StagingConfig,
  WorkerConfig,
  readSinks,
  readStaging,
  readWorker,
} from './worker-config';

export type { ApiDocsAccess, AuthConfig, CapabilityEnforcement } from './auth-config';
export type { CodegenConfig } from './codegen-config';
export { parseMasterKey } from './master-key';
export type { PeersConfig } from './peers-config';
export type { TapsConfig } from './taps-config';
export type { SinksConfig, StagingConfig, WorkerConfig } from './worker-config';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * The one validated configuration object, built at boot from the environment. Each domain's section
 * is declared and read in a file of its own (auth-config.ts, taps-config.ts…); this file holds the
 * platform-wide settings and puts the sections together.
 */
export interface TapyardConfig extends PeersConfig {
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
  /**
   * CONSOLE_DIR: the built administration console the API serves at `/`; null: the one built beside the
   * API (`dist/console`); `off`: none.
   */
  readonly consoleDir: string | null;
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
  readonly auth: AuthConfig;
  /** 32-byte AES-256 key; never logged, never returned. */
  readonly masterKey: Buffer;
  readonly worker: WorkerConfig;
  /** This host's own scratch directory: a job's copy of its staged input, archive extraction. Never shared. */
  readonly spoolDir: string;
  readonly staging: StagingConfig;
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
   * An entry written `<environment>=host:port` serves that environment's work alone.
   */
  readonly egressAllow: readonly Endpoint[];
  /** REST sinks: private endpoints they may POST to (everything else private is refused). */
  readonly restSinkAllow: AllowList;
  readonly sinks: SinksConfig;
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

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Builds the config or throws a ConfigError naming every offending variable. */
export function loadConfig(env: Env = process.env): TapyardConfig {
  const r = new EnvReader(env);
  const environment = r.string('TAPYARD_ENV', 'dev');
  if (!ENVIRONMENT_NAME.test(environment)) {
    r.problems.push(
      `TAPYARD_ENV must start with a lowercase letter and hold only a-z, 0-9, _ and - (max 40; got "${environment}")`,
    );
  }
  const dataDir = r.string('TAPYARD_DATA_DIR', join(homedir(), '.local', 'share', 'tapyard'));
  const peers = readPeers(r, environment);
  const workerConcurrency = r.int('WORKER_CONCURRENCY', 16, 1, 256);
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
    consoleDir: r.optional('CONSOLE_DIR'),
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
    ...peers,
    auth: readAuth(r),
    masterKey: readMasterKey(r, dataDir),
    worker: readWorker(r, workerConcurrency),
    spoolDir: r.string('TAPYARD_SPOOL_DIR', join(dataDir, 'spool')),
    staging: readStaging(r),
    progressEveryMs: r.int('STATUS_PROGRESS_MS', 2000, 10, 3600000),
    rawPollMs: r.int('RAW_POLL_MS', 5000, 0, 3600000),
    loadRetry: {
      attempts: r.int('LOAD_RETRY_ATTEMPTS', 5, 1, 100),
      delayMs: r.int('LOAD_RETRY_DELAY_MS', 2000, 10, 3600000),
    },
    egressAllow: r.endpoints('TAP_EGRESS_ALLOW'),
    restSinkAllow: r.allowList('REST_SINK_ALLOW'),
    sinks: readSinks(r, workerConcurrency),
    codegen: readCodegen(r, dataDir),
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
    taps: readTaps(r, dataDir),
  };
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return Object.freeze(config);
}

function readPackageVersion(): string {
  // dist/libs/core/src/config -> repository root, or libs/core/src/config under Jest.
  for (const rel of ['../../../../../package.json', '../../../../package.json']) {
    const p = join(__dirname, rel);
    if (existsSync(p)) {
      const v = (JSON.parse(readFileSync(p, 'utf8')) as { version?: string }).version;
      if (v) return v;
    }
  }
  return '0.0.0';
}
