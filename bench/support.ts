/** Shared by the benchmarks: the built apps as processes, uploads streamed from disk, rollup polling. */
import { ChildProcess, spawn } from 'node:child_process';
import {
  closeSync,
  createReadStream,
  createWriteStream,
  existsSync,
  openSync,
  readFileSync,
  readdirSync,
  statSync,
} from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { request } from 'node:http';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { LOCAL_OBJECT_STORE, LOCAL_REDIS_URL, localDatabaseUrl } from '../test/support/local-peers';

/**
 * The checkout: the compiled benchmarks live in a build under `.builds/<id>/bench/bench` (reached through the
 * `dist` link), so the root is the first directory above them holding `scripts/services`.
 */
export const ROOT = ((): string => {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'scripts', 'services'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no checkout above ${__dirname}`);
  }
})();

/** Postgres the benchmarks load into (and start their apps against). */
export const DB_URL = process.env.BENCH_DATABASE_URL ?? localDatabaseUrl('tapyard_test');

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The Node flags each app is deployed with (scripts/lib/node.sh). */
export function deployedNodeOptions(app: 'api' | 'worker'): string {
  return `--max-semi-space-size=${app === 'worker' ? 32 : 8}`;
}

/**
 * The API's niceness above the worker's when both run on one host (scripts/lib/node.sh, TAPYARD_API_NICE;
 * `BENCH_API_NICE` measures another).
 */
export function deployedApiNice(): number {
  return Number(process.env.BENCH_API_NICE ?? 10);
}

export function startApp(app: 'api' | 'worker', env: Record<string, string>): ChildProcess {
  // Benchmarks may run several workers on this host: each takes an ephemeral operations port.
  const ports = app === 'worker' ? { WORKER_HTTP_PORT: '0' } : {};
  // Flags NODE_OPTIONS refuses (`--trace-gc`, `-r <preload>`), for a run that looks inside the apps.
  const node = [
    ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
    join(ROOT, 'dist', 'apps', app, 'src', 'main.js'),
  ];
  // As scripts/up starts them: the API at a lower priority than the worker.
  const [command, args] =
    app === 'api' && deployedApiNice() > 0
      ? ['nice', ['-n', String(deployedApiNice()), process.execPath, ...node]]
      : [process.execPath, node];
  // The apps log JSON to stdout; a run that looks inside them (`--trace-gc`) keeps it.
  const out = process.env.BENCH_APP_STDOUT_DIR;
  const stdout = out ? openSync(join(out, `${app}-${process.pid}.out`), 'a') : null;
  const child = spawn(command, args, {
    // The Node flags the apps are deployed with (scripts/lib/node.sh, the Docker image and its commands).
    env: { ...process.env, NODE_OPTIONS: deployedNodeOptions(app), ...ports, ...env },
    stdio: ['ignore', stdout ?? 'ignore', 'inherit'],
  });
  // The child has its own copy.
  if (stdout !== null) closeSync(stdout);
  return child;
}

/** The environment of the benchmark's own API and worker: a fresh environment on loopback peers. */
export function platformEnv(
  environment: string,
  port: number,
  databaseUrl: string,
  dir: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    TAPYARD_ENV: environment,
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    TAPYARD_MASTER_KEY: 'b'.repeat(64),
    TAPYARD_SPOOL_DIR: join(dir, 'spool'),
    UPLOAD_LIMIT: '20gb',
    LOG_LEVEL: 'warn',
    REDIS_URL: process.env.BENCH_REDIS_URL ?? LOCAL_REDIS_URL,
    ...LOCAL_OBJECT_STORE,
    ...extra,
  };
}

/** A benchmark's own API address (a random port of a range) and a fresh environment name. */
export function benchTarget(prefix: string): { PORT: number; BASE: string; ENV: string } {
  const port = 18000 + Math.floor(Math.random() * 3000);
  return { PORT: port, BASE: `http://127.0.0.1:${port}/api/v1`, ENV: `${prefix}-${Date.now().toString(36)}` };
}

export interface BenchPlatform {
  api: ChildProcess;
  worker: ChildProcess;
  /** SIGTERM to both; resolves once both exited. */
  stop(): Promise<void>;
}

/**
 * The environment's buckets, with their objects: every run makes a fresh environment, and MinIO's CPU
 * grows with its bucket count (the e2e runs remove theirs the same way, test/environment.js). A bucket
 * that cannot be removed is left, said on stderr.
 */
async function removeBuckets(environment: string): Promise<void> {
  // Plain CommonJS shared with the Jest environment: loaded from the checkout, not compiled here.
  const { storeClient, forceRemoveBucket } = (await import(
    join(ROOT, 'test', 'support', 'minio-buckets.js')
  )) as typeof import('../test/support/minio-buckets');
  const client = storeClient(LOCAL_OBJECT_STORE);
  try {
    const mine = (await client.listBuckets()).filter((b) => b.name.startsWith(`${environment}-`));
    await Promise.all(mine.map((b) => forceRemoveBucket(client, b.name)));
  } catch (err) {
    console.error(`the bench's buckets (${environment}-*) were left: ${(err as Error).message}`);
  }
}

/** A bench's environment (benchTarget): its prefix, then the time it was made. */
const BENCH_ENVIRONMENT = /^(bench[a-z]*(-[a-z]+)?|bu)-[0-9a-z]{6,}$/;

/**
 * The environment's Redis keys (its queues with their kept jobs), and those runs that were interrupted
 * left three hours ago or more: every BullMQ job kept is written again by each of Redis's snapshots.
 */
async function removeKeys(redisUrl: string, environment: string): Promise<void> {
  const { removeEnvironmentKeys, sweepIdleEnvironmentKeys } = (await import(
    join(ROOT, 'test', 'support', 'redis-keys.js')
  )) as typeof import('../test/support/redis-keys');
  try {
    await removeEnvironmentKeys(redisUrl, [environment]);
    await sweepIdleEnvironmentKeys(redisUrl, { budgetMs: 10_000, matches: (e) => BENCH_ENVIRONMENT.test(e) });
  } catch (err) {
    console.error(`the bench's Redis keys (tapyard:${environment}:*) were left: ${(err as Error).message}`);
  }
}

/** The built API and one worker of an environment, on loopback peers, once the API answers. */
export async function startPlatform(
  environment: string,
  port: number,
  dir: string,
  extra: Record<string, string> = {},
  /** Settings for one of the two only (e.g. each its own `--inspect` port). */
  only: { api?: Record<string, string>; worker?: Record<string, string> } = {},
): Promise<BenchPlatform> {
  const env = platformEnv(environment, port, DB_URL, dir, extra);
  const api = startApp('api', { ...env, ...only.api });
  const worker = startApp('worker', { ...env, ...only.worker });
  let stopping = false;
  // An app that dies under the bench ends it loudly: the bench would otherwise wait for its jobs forever.
  for (const [name, p] of [
    ['API', api],
    ['worker', worker],
  ] as const) {
    p.once('exit', (code, signal) => {
      if (stopping) return;
      console.error(`NOT COMPARABLE: the ${name} exited during the bench (code ${code}, signal ${signal})`);
      api.kill('SIGKILL');
      worker.kill('SIGKILL');
      process.exit(1);
    });
  }
  const stop = async () => {
    stopping = true;
    await Promise.all(
      [api, worker].map(async (p) => {
        if (p.exitCode !== null || p.signalCode !== null) return;
        const exited = new Promise((r) => p.once('exit', r));
        p.kill('SIGTERM');
        await exited;
      }),
    );
    await Promise.all([removeBuckets(environment), removeKeys(env.REDIS_URL, environment)]);
  };
  try {
    await waitHttp(`http://127.0.0.1:${port}/api/v1/version`);
  } catch (err) {
    await stop();
    throw err;
  }
  return { api, worker, stop };
}

/** Up to a minute: a loaded machine (other sessions building, testing) starts the apps slowly. */
export async function waitHttp(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await sleep(100);
  }
  throw new Error(`${url} did not answer`);
}

/**
 * Polls the rollup of a token query every `everyMs` until `jobs` jobs are done; throws unless all
 * succeeded; returns the jobs. A status reply of many jobs costs the API real CPU: a long load of many
 * jobs polls slower.
 */
export async function waitForRollup(
  base: string,
  query: string,
  jobs = 1,
  everyMs = 50,
): Promise<{ lastEventAt: string }[]> {
  for (;;) {
    const reply = await fetch(`${base}/pipeline/status?${query}&withrollup=true`);
    if (reply.status === 404) {
      await sleep(everyMs);
      continue;
    }
    const res = (await reply.json()) as {
      rollup: { allDone: boolean; status: string; jobs: { lastError: unknown; lastEventAt: string }[] };
    };
    if (res.rollup.allDone && res.rollup.jobs.length >= jobs) {
      if (res.rollup.status !== 'success')
        throw new Error(`bench load ended ${res.rollup.status}: ${JSON.stringify(res.rollup.jobs)}`);
      return res.rollup.jobs;
    }
    await sleep(everyMs);
  }
}

/**
 * Seconds from `began` (Date.now() as the upload began) to the platform's own end of the load: its
 * last job's last event, not when a poll saw it. Polls 50 ms apart added up to 50 ms (25 on average)
 * to a round of 200-300 ms, while the bare clients it is compared with are timed to their end.
 */
export async function secondsToDone(base: string, query: string, began: number, jobs = 1): Promise<number> {
  const done = await waitForRollup(base, query, jobs);
  return (Math.max(...done.map((j) => Date.parse(j.lastEventAt))) - began) / 1000;
}

/** Resident memory of a process in MB (Linux). */
export async function rssMb(pid: number | undefined): Promise<number> {
  if (pid === undefined) return NaN;
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]);
  return kb / 1024;
}

/**
 * CPU seconds a process has used, with its reaped children (a worker's sandboxed scripts): fields
 * 14-17 of /proc/<pid>/stat, in clock ticks of 1/100 s (Linux's USER_HZ).
 */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command: field 3 (state) is fields[0], so field 14 (utime) is fields[11].
  return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0) / 100;
}

/**
 * CPU seconds of each thread of a process, summed by thread name (`MainThread`, `WorkerThread` for a
 * Node worker thread and the native threads it starts, `V8Worker` for the collector and compiler,
 * `libuv-worker`): where a process's CPU went, from /proc/<pid>/task/<tid>/stat. A thread that ended
 * is not listed (its CPU stays in the process's total).
 */
export async function threadCpuSeconds(pid: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => null);
    if (!stat) continue;
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(name, (out.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100);
  }
  return out;
}

/** Streams a multipart upload from disk (the file never sits in this process's memory). */
export function uploadFile(
  base: string,
  file: string,
  pipeline: string,
  filename = 'bench.csv',
  publisher?: string,
): Promise<string> {
  const boundary = `----tapyard${Date.now()}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="pipeline"\r\n\r\n${pipeline}\r\n` +
      (publisher
        ? `--${boundary}\r\nContent-Disposition: form-data; name="publishertoken"\r\n\r\n${publisher}\r\n`
        : '') +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/pipeline/upload`,
      {
        method: 'POST',
        headers: {
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': head.length + statSync(file).size + tail.length,
        },
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(body.trim())
            : reject(new Error(`upload: ${res.statusCode} ${body}`)),
        );
      },
    );
    req.on('error', reject);
    req.write(head);
    const input = createReadStream(file, { highWaterMark: 1 << 20 });
    input.on('error', reject);
    input.on('end', () => req.end(tail));
    input.pipe(req, { end: false });
  });
}

/** POST JSON; throws with the body on a non-2xx answer. */
export async function postJson<T>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** A benchmark table: name, Tapyard type, Postgres type, and the CSV text of row i. */
export type BenchColumn = [string, string, string, (i: number) => string];

const day = (i: number): string => String(1 + (i % 28)).padStart(2, '0');

/** The mixed file: nine columns of every type, quoted text with commas (107 MB at 1M rows). */
export const COLUMNS: BenchColumn[] = [
  ['id', 'bigint', 'bigint', (i) => String(i)],
  ['customer', 'string', 'text', (i) => `customer-${i % 50000}`],
  ['zip', 'string', 'text', (i) => String(i % 99999).padStart(5, '0')],
  ['amount', 'double', 'double precision', (i) => (i * 1.37).toFixed(2)],
  ['qty', 'int', 'integer', (i) => String(i % 1000)],
  ['sold_on', 'date', 'date', (i) => `2026-03-${day(i)}`],
  [
    'sold_at',
    'timestamp',
    'timestamptz',
    (i) => `2026-03-${day(i)}T12:${String(i % 60).padStart(2, '0')}:00Z`,
  ],
  ['paid', 'boolean', 'boolean', (i) => String(i % 2 === 0)],
  ['note', 'string', 'text', (i) => `"note ${i}, with a comma"`],
];

/** The narrow file: five short columns (id, amount, label, flag, date), where per-row work is all the cost. */
export const NARROW_COLUMNS: BenchColumn[] = [
  ['id', 'int', 'integer', (i) => String(i)],
  ['amount', 'double', 'double precision', (i) => (i * 0.37).toFixed(2)],
  ['label', 'string', 'text', (i) => `label-${i % 1000}`],
  ['flag', 'boolean', 'boolean', (i) => (i % 3 === 0 ? 'true' : 'false')],
  ['day', 'date', 'date', (i) => `2026-03-${day(i)}`],
];

/** A CSV of `rows` rows of `columns`; row i is the same in every benchmark. */
export async function writeCsv(
  path: string,
  rows: number,
  columns: BenchColumn[] = COLUMNS,
): Promise<number> {
  const out = createWriteStream(path);
  out.write(columns.map((c) => c[0]).join(',') + '\n');
  let buf = '';
  for (let i = 1; i <= rows; i++) {
    buf += columns.map((c) => c[3](i)).join(',') + '\n';
    if (buf.length > 1 << 20) {
      if (!out.write(buf)) await new Promise<void>((r) => out.once('drain', () => r()));
      buf = '';
    }
  }
  out.end(buf);
  await new Promise<void>((r) => out.once('finish', () => r()));
  return statSync(path).size;
}

/** Registers a pipeline of the benchmark columns loading into `<schema>.<table>` of DB_URL. */
export async function benchPipeline(
  base: string,
  p: { name: string; schema: string; table: string; rules?: object[]; columns?: BenchColumn[] },
): Promise<void> {
  await postJson(`${base}/pipeline`, {
    name: p.name,
    source: { schemaProperties: { fields: (p.columns ?? COLUMNS).map(([n, type]) => ({ name: n, type })) } },
    dataQuality: { rules: p.rules ?? [] },
    destination: {
      database: { dbName: new URL(DB_URL).pathname.slice(1), schema: p.schema, table: p.table },
    },
  });
}

/**
 * CPU seconds the whole machine spent during a run, and how much of it the run itself accounts for: this
 * bench with every process it started (its API, worker, psql, sandboxed scripts), and the local peers
 * it loads (Postgres, Redis, MinIO, the brokers and stores of scripts/services). The rest went to other
 * processes (another session's build or tests, a hypervisor's steal) and stretched the run's times.
 */
export interface MachineReadings {
  /** Capacity: every core's time over the run, idle included. */
  totalSeconds: number;
  /** Not idle, of any process, the kernel, or stolen by the hypervisor. */
  busySeconds: number;
  benchSeconds: number;
  peerSeconds: number;
}

/** The share of the machine other processes may take before a run's figures stop being comparable. */
export const BUSY_LIMIT = 0.25;

export interface Comparability {
  comparable: boolean;
  /** The line printed after the figures: what the machine did, and why the run does not count if so. */
  line: string;
}

/**
 * Whether a run's figures compare with another run's: no other process took more than BUSY_LIMIT of the
 * machine, and every peer the bench measures against answered (a missing peer is a missing figure, never
 * a skipped row).
 */
export function comparability(r: MachineReadings, missingPeers: string[] = []): Comparability {
  const others = Math.max(0, r.busySeconds - r.benchSeconds - r.peerSeconds);
  const share = r.totalSeconds > 0 ? others / r.totalSeconds : 0;
  const reasons = [
    ...(share > BUSY_LIMIT
      ? [
          `other processes took ${pct(share)} of the machine during the run (limit ${pct(BUSY_LIMIT)}): the machine was busy`,
        ]
      : []),
    ...missingPeers.map((why) => `peer missing: ${why}`),
  ];
  const figures =
    `machine: ${r.totalSeconds.toFixed(0)} CPU s of capacity, this bench ${r.benchSeconds.toFixed(1)} s, ` +
    `its peers ${r.peerSeconds.toFixed(1)} s, other processes ${others.toFixed(1)} s (${pct(share)})`;
  return reasons.length === 0
    ? { comparable: true, line: `${figures}: comparable` }
    : { comparable: false, line: `${figures}\nNOT COMPARABLE: ${reasons.join('; ')}` };
}

function pct(share: number): string {
  return `${(share * 100).toFixed(0)} %`;
}

/** Clock ticks per second of /proc (Linux's USER_HZ). */
const TICKS = 100;

interface ProcessTicks {
  ppid: number;
  comm: string;
  /** utime + stime + cutime + cstime: its own CPU and that of the children it reaped. */
  ticks: number;
  /** When it started (clock ticks after boot): with the pid, names one process even after pid reuse. */
  startTime: number;
}

/** The machine's busy CPU seconds so far, all cores (user, nice, system, irq, softirq, steal). */
export function machineBusySeconds(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  return (user + nice + system + irq + softirq + steal) / 100;
}

export interface MachineSample {
  total: number;
  busy: number;
  processes: Map<number, ProcessTicks>;
}

export function sampleMachine(): MachineSample {
  // cpu user nice system idle iowait irq softirq steal (guest time is already inside user).
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1, 9).map(Number);
  const processes = new Map<number, ProcessTicks>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    processes.set(Number(entry), {
      comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      ppid: Number(fields[1]),
      ticks: fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0),
      startTime: Number(fields[19]),
    });
  }
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  return { total: sum(cpu), busy: sum(cpu) - cpu[3] - cpu[4], processes };
}

/** The local peers' processes: Postgres and Redis by name, the daemons of scripts/services by pid file. */
function peerRoots(sample: MachineSample): Set<number> {
  const roots = new Set<number>();
  for (const [pid, p] of sample.processes)
    if (p.comm === 'postgres' || p.comm === 'redis-server') roots.add(pid);
  const home = process.env.TAPYARD_HOME ?? join(homedir(), '.cache', 'tapyard');
  try {
    for (const file of readdirSync(home).filter((f) => f.endsWith('.pid')))
      roots.add(Number(readFileSync(join(home, file), 'utf8').trim()));
  } catch {
    /* no daemons started by scripts/services */
  }
  return roots;
}

/** The processes in `roots` and all their descendants. */
function treePids(sample: MachineSample, roots: Set<number>): Set<number> {
  const inTree = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = sample.processes.get(p)?.ppid ?? 0, hops++)
      if (roots.has(p)) return true;
    return false;
  };
  return new Set([...sample.processes.keys()].filter(inTree));
}

/** CPU ticks of the processes in `roots` and all their descendants. */
function treeTicks(sample: MachineSample, roots: Set<number>): number {
  let ticks = 0;
  for (const pid of treePids(sample, roots)) ticks += (sample.processes.get(pid) as ProcessTicks).ticks;
  return ticks;
}

/**
 * CPU seconds by process since the call, when the returned function is called: each process under its
 * label in `labels` (by pid) or its command name, a process that exited in its parent's (a psql
 * backend in the postmaster's, psql in the bench's): where a run's CPU went, machine-wide.
 */
export function cpuByProcess(labels: Map<number, string>): () => Map<string, number> {
  const start = sampleMachine();
  return () => {
    const out = new Map<string, number>();
    for (const [pid, p] of sampleMachine().processes) {
      const before = start.processes.get(pid);
      const ticks = p.ticks - (before?.startTime === p.startTime ? before.ticks : 0);
      if (ticks <= 0) continue;
      const label = labels.get(pid) ?? postgresRole(pid) ?? p.comm;
      out.set(label, (out.get(label) ?? 0) + ticks / TICKS);
    }
    return out;
  };
}

/**
 * What a PostgreSQL process does, from the title it sets (`postgres: 15/main: walwriter` →
 * `pg walwriter`; a backend `pg backend`; the postmaster, which holds its exited backends' CPU,
 * `pg postmaster`); undefined for any other process.
 */
function postgresRole(pid: number): string | undefined {
  let title: string;
  try {
    title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return undefined;
  }
  if (/\/postgres -D /.test(title)) return 'pg postmaster';
  const m = /^postgres: (?:[\w.]+\/\w+: )?(.*)$/.exec(title);
  if (!m) return undefined;
  const role = /^(checkpointer|background writer|walwriter|autovacuum \w+|logical replication \w+)/.exec(
    m[1],
  );
  return role ? `pg ${role[1]}` : 'pg backend';
}

const missingPeers: string[] = [];

/** A peer the bench measures against did not answer: the run still prints what it has, then fails. */
export function peerMissing(why: string): void {
  console.log(`peer missing: ${why}`);
  missingPeers.push(why);
}

/**
 * What the machine, the bench's own process tree and its peers spent since the watch was made. Peers are
 * the local services (Postgres and Redis by name, the daemons of scripts/services by pid file) and the
 * processes `countAsPeers` names: a harness's daemons (scripts/cluster's services and app hosts) leave the
 * bench's process tree when they detach, and would otherwise count as other processes.
 */
export class MachineWatch {
  private readonly self = new Set([process.pid]);
  private readonly startBench: number;
  private readonly startPeers: number;
  /** The harness's processes when last counted: their ticks since the start, by pid and start time. */
  private harness = new Map<string, { pid: number; ticks: number }>();

  /** `start`: the machine as sampled now, unless given (two watches of one sample differ only in what they count). */
  constructor(private readonly start: MachineSample = sampleMachine()) {
    this.startBench = treeTicks(start, this.self);
    this.startPeers = treeTicks(start, peerRoots(start));
  }

  /**
   * `pids` and their descendants, as they are now, are the bench's peers: their CPU since the watch
   * started is taken now and counted even after they exit. Call again to update (a child that exited
   * meanwhile is in its parent's times), last just before stopping them.
   */
  countAsPeers(pids: Iterable<number>): void {
    const now = sampleMachine();
    this.harness = new Map();
    for (const pid of treePids(now, new Set(pids))) {
      const p = now.processes.get(pid) as ProcessTicks;
      const before = this.start.processes.get(pid);
      const base = before?.startTime === p.startTime ? before.ticks : 0;
      this.harness.set(`${pid}@${p.startTime}`, { pid, ticks: p.ticks - base });
    }
  }

  /** `end`: the machine as sampled now, unless given. */
  readings(end: MachineSample = sampleMachine()): MachineReadings {
    const peers = treePids(end, peerRoots(end));
    const bench = treePids(end, this.self);
    let harness = 0;
    for (const [key, h] of this.harness) {
      const p = end.processes.get(h.pid);
      // Still running: counted with the bench's tree or the peers' when it is in them, else here.
      if (p && key === `${h.pid}@${p.startTime}` && (peers.has(h.pid) || bench.has(h.pid))) continue;
      harness += h.ticks;
    }
    return {
      totalSeconds: (end.total - this.start.total) / TICKS,
      busySeconds: (end.busy - this.start.busy) / TICKS,
      benchSeconds: Math.max(0, treeTicks(end, this.self) - this.startBench) / TICKS,
      peerSeconds: (Math.max(0, treeTicks(end, peerRoots(end)) - this.startPeers) + harness) / TICKS,
    };
  }
}

/**
 * Call first in a bench: samples the machine now and again as the bench exits, prints the verdict after
 * its figures, and makes the exit code non-zero when the run is not comparable. BENCH_ALLOW_BUSY=1 keeps
 * the exit code (the NOT COMPARABLE line is printed all the same), for iterating on a shared machine.
 * Returns the watch, for a bench whose harness daemons leave its process tree (`countAsPeers`).
 */
export function checkComparable(): MachineWatch {
  const watch = new MachineWatch();
  process.once('exit', () => {
    const verdict = comparability(watch.readings(), missingPeers);
    console.log(verdict.line);
    if (!verdict.comparable && process.env.BENCH_ALLOW_BUSY !== '1' && !process.exitCode)
      process.exitCode = 1;
  });
  return watch;
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
