import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * A distributed Tapyard on this machine, from `scripts/cluster` (root, network namespaces, bwrap; the apps
 * from dist/, so `npm run build` first): a services host with its own PostgreSQL + pgvector, Redis and MinIO,
 * an API host and worker hosts with private disks. Every host is reachable from the test process through
 * the cluster's bridge, whose address on this side is `bridgeAddress`.
 */

/** scripts/cluster of this checkout, found upwards: from test/support, and from the compiled benchmarks. */
function findScript(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const candidate = join(dir, 'scripts', 'cluster');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`no scripts/cluster above ${__dirname}`);
  }
}

const SCRIPT = findScript();
/** Bounds of the script's commands: `up` builds nothing but starts four servers and the apps. */
const UP_TIMEOUT_MS = 240_000;
const COMMAND_TIMEOUT_MS = 150_000;
const DOWN_TIMEOUT_MS = 120_000;

export type ServiceName = 'postgres' | 'redis' | 'minio';

export interface ClusterInfo {
  name: string;
  dir: string;
  subnet: string;
  bridgeAddress: string;
  environment: string;
  /** `http://<api host>:8080/api/v1` */
  apiUrl: string;
  services: {
    host: string;
    databaseUrl: string;
    redisUrl: string;
    objectStore: {
      OBJECT_STORE_ENDPOINT: string;
      OBJECT_STORE_ACCESS_KEY: string;
      OBJECT_STORE_SECRET_KEY: string;
    };
  };
  masterKey: string;
  hosts: Record<string, { ip: string; running: boolean }>;
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Cluster extends ClusterInfo {
  /** The app hosts (api, w1, w2...) and whether their processes run, as of now. */
  refresh(): Promise<ClusterInfo>;
  /** Every process of a host (its namespace's and their descendants). */
  pids(host: string): Promise<number[]>;
  /** The host's app process (node) as the services and the queue see it; null when it does not run. */
  appPid(host: string): Promise<number | null>;
  /** SIGKILL to every process of the host; resolves once none is left. */
  killHost(host: string): Promise<void>;
  /** Starts the app of a host again (after killHost), waiting for its ready line. */
  startHost(host: string): Promise<void>;
  /** A new worker host (w<N+1>); resolves with its name once the worker is ready. */
  startWorker(): Promise<string>;
  stopService(service: ServiceName): Promise<void>;
  startService(service: ServiceName): Promise<void>;
  /** Stop, then `whileDown` (if given), then start on the same data directory. */
  restartService(service: ServiceName, whileDown?: () => Promise<void>): Promise<void>;
  /** The host's app log (stdout and stderr of every start). */
  logs(host: string): string;
  /** Runs a command inside the host: its network namespace and its root (private /tmp and data). */
  exec(host: string, command: string[]): Promise<ExecResult>;
  /** Removes everything the cluster made; safe to call twice. */
  stop(): Promise<void>;
}

const live = new Set<string>();
let exitHookInstalled = false;

/** On any exit of this process, clusters still up are torn down (a crash is reaped by the next `up`). */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const name of live) {
      try {
        execFileSync('bash', [SCRIPT, '--name', name, 'down'], { timeout: DOWN_TIMEOUT_MS, stdio: 'ignore' });
      } catch {
        // Nothing more can be done while exiting; the next `up` removes what is left.
      }
    }
  });
}

function run(name: string, args: string[], timeoutMs = COMMAND_TIMEOUT_MS): Promise<ExecResult> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [SCRIPT, '--name', name, ...args],
      { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr: err && err.killed ? `${stderr}\n(timed out)` : stderr });
      },
    );
  });
}

async function must(name: string, args: string[], timeoutMs?: number): Promise<string> {
  const r = await run(name, args, timeoutMs);
  if (r.code !== 0) throw new Error(`scripts/cluster ${args.join(' ')} failed (${r.code}):\n${r.stderr}`);
  return r.stdout;
}

/**
 * `workerMain`: the worker hosts' entry point, a path under the repository (`testWorkerMain()`: the test
 * worker, whose pings are held for their `holdMs`); the built worker when absent.
 */
export async function startCluster(
  opts: { workers?: number; env?: Record<string, string>; workerMain?: string } = {},
): Promise<Cluster> {
  // `tyc` + 5 characters: interface names stay under Linux's 15, and each run is a cluster of its own.
  const name = `tyc${randomBytes(4).toString('hex').slice(0, 5)}`;
  const envDir = mkdtempSync(join(tmpdir(), 'tapyard-cluster-env-'));
  const envFile = join(envDir, 'extra.env');
  writeFileSync(
    envFile,
    Object.entries(opts.env ?? {})
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
    { mode: 0o600 },
  );
  installExitHook();
  live.add(name);
  let info: ClusterInfo;
  try {
    const out = await must(
      name,
      [
        'up',
        '--workers',
        String(opts.workers ?? 2),
        '--env-file',
        envFile,
        '--owner',
        String(process.pid),
        ...(opts.workerMain ? ['--worker-main', opts.workerMain] : []),
      ],
      UP_TIMEOUT_MS,
    );
    info = JSON.parse(out) as ClusterInfo;
  } catch (err) {
    await run(name, ['down'], DOWN_TIMEOUT_MS);
    live.delete(name);
    throw err;
  } finally {
    rmSync(envDir, { recursive: true, force: true });
  }

  const pids = async (host: string): Promise<number[]> =>
    (await must(name, ['pids', host]))
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .sort((a, b) => a - b);

  const cluster: Cluster = {
    ...info,
    refresh: async () => {
      const now = JSON.parse(await must(name, ['info'])) as ClusterInfo;
      cluster.hosts = now.hosts;
      return now;
    },
    pids,
    appPid: async (host) => {
      for (const pid of await pids(host)) {
        try {
          // By its program, not /proc/<pid>/comm: Node 24 names its main thread `MainThread`.
          const program = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
          if (program.split('/').pop() === 'node') return pid;
        } catch {
          // gone meanwhile
        }
      }
      return null;
    },
    killHost: async (host) => void (await must(name, ['kill', host])),
    startHost: async (host) => void (await must(name, ['start', host])),
    startWorker: async () => (await must(name, ['start-worker'])).trim(),
    stopService: async (service) => void (await must(name, ['stop-service', service])),
    startService: async (service) => void (await must(name, ['start-service', service])),
    restartService: async (service, whileDown) => {
      await must(name, ['stop-service', service]);
      try {
        await whileDown?.();
      } finally {
        await must(name, ['start-service', service]);
      }
    },
    logs: (host) => {
      try {
        return readFileSync(join(info.dir, 'hosts', host, 'app.log'), 'utf8');
      } catch {
        return '';
      }
    },
    exec: (host, command) => run(name, ['exec', host, '--', ...command]),
    stop: async () => {
      if (!live.has(name)) return;
      await must(name, ['down'], DOWN_TIMEOUT_MS);
      live.delete(name);
    },
  };
  return cluster;
}
