/**
 * `npm run bench:uploads` — many small uploads at once (issue 30, goal 1): UPLOADS uploads of ROWS rows from
 * CLIENTS clients into PIPELINES pipelines, while POLLERS clients poll job status, against the built API and
 * one worker on loopback peers. Prints uploads/s over the upload phase, the upload answer's p50/p95, how long
 * until every job ended, and the pickup (StreamNotifier `end` → JobRunner `begin`, from the status events)
 * p50/p95. Fails loudly when a job does not end `success`. The goal: ≥ 250 uploads/s, p95 < 300 ms, pickup
 * p95 < 50 ms on the 2-core machine.
 *
 * BENCH_ROUNDS=N (default 1) repeats the load N times against the same processes and prints the API's and
 * the worker's resident memory after each round has settled (goal 2: no growth across repeated load runs).
 * BENCH_HEAP_DIR=<dir> also opens both apps' inspectors and prints their heap after a forced GC each round,
 * and writes heap snapshots there after the rounds of BENCH_HEAP_SNAPSHOTS (e.g. `3,12`; bench/heap-diff.ts
 * compares two).
 */
import { mkdtemp, readFile, readdir, readlink, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { Inspector } from './heap';
import {
  DB_URL,
  benchTarget,
  deployedApiNice,
  deployedNodeOptions,
  machineBusySeconds,
  rssMb,
  sleep,
  startPlatform,
} from './support';
import { checkComparable } from './support';
import { LOCAL_REDIS_URL } from '../test/support/local-peers';

const UPLOADS = Number(process.env.BENCH_UPLOADS ?? 1200);
const ROWS = 200;
/** The issue's load is 32; `BENCH_CLIENTS` measures another. */
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const PIPELINES = 8;
const POLLERS = 4;
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
/** Uploads per pipeline sent one at a time, each waited for, before the rounds (not measured). */
const WARMUP = Math.max(0, Number(process.env.BENCH_WARMUP ?? 0));
/** Idle time after a round before its memory is read: timers, pools and the allocator settle. */
const SETTLE_MS = 5000;

function csv(rows: number): Buffer {
  const lines = ['id,name,amount'];
  for (let i = 0; i < rows; i++) lines.push(`${i},name ${i},${(i * 1.25).toFixed(2)}`);
  return Buffer.from(`${lines.join('\n')}\n`);
}

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** CPU seconds (user + system) a process has used so far (Linux; clock ticks of 1/100 s). */
async function cpuSeconds(pid: number | undefined): Promise<number> {
  if (pid === undefined) return NaN;
  // The fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces); null once it exited. */
async function statFields(pid: number): Promise<string[] | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  return stat === null ? null : stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * CPU seconds of a server and its children (PostgreSQL's backends): the postmaster's own and its exited
 * children's times (cutime, cstime), plus each live child's. Shared servers: other sessions' queries count.
 */
async function treeCpuSeconds(root: number | undefined): Promise<number> {
  if (root === undefined) return NaN;
  const sum = (f: string[], from: number, to: number): number =>
    f.slice(from, to + 1).reduce((a, v) => a + Number(v), 0) / 100;
  const own = await statFields(root);
  if (own === null) return NaN;
  let total = sum(own, 11, 14);
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = await statFields(Number(entry));
    if (f !== null && Number(f[1]) === root) total += sum(f, 11, 14);
  }
  return total;
}

/** The local TCP ports of a process's sockets (its inodes matched in /proc/net/tcp). */
async function localPorts(pid: number | undefined): Promise<Set<number>> {
  const ports = new Set<number>();
  if (pid === undefined) return ports;
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m) inodes.add(m[1]);
  }
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && inodes.has(f[9])) ports.add(parseInt(f[1].split(':')[1], 16));
    }
  }
  return ports;
}

/**
 * CPU seconds of the PostgreSQL backends serving the API's and the worker's connections (found by their
 * client ports): the database work of this load alone, without other sessions' or background writers'.
 */
async function appBackendsCpuSeconds(pg: Client, pids: (number | undefined)[]): Promise<number> {
  const ports = new Set<number>();
  for (const pid of pids) for (const port of await localPorts(pid)) ports.add(port);
  const { rows } = await pg.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[])',
    [[...ports]],
  );
  let total = 0;
  for (const { pid } of rows) {
    const f = await statFields(pid);
    if (f !== null) total += (Number(f[11]) + Number(f[12])) / 100;
  }
  return total;
}

/** The pid of the local Redis server (by its command name), if this machine runs one. */
async function redisPid(): Promise<number | undefined> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const comm = await readFile(`/proc/${entry}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === 'redis-server') return Number(entry);
  }
  return undefined;
}

/** Calls per Redis command so far (INFO commandstats): what BullMQ and the apps sent, all clients. */
async function redisCalls(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1], Number(m[2]));
  return calls;
}

/** PostgreSQL transactions of the benchmark's database so far (each statement outside one counts one). */
async function transactions(pg: Client): Promise<number> {
  const { rows } = await pg.query<{ n: string }>(
    'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(rows[0].n);
}

/**
 * fetch(), once more when the API closed a kept-alive connection as it was reused (ECONNRESET: Node's
 * server drops a connection idle for 5 s, the rounds' settle time, and a heap snapshot pauses it): the
 * request never reached the handler, so sending it again does not count an upload twice.
 */
async function send(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code;
    if (code !== 'ECONNRESET' && code !== 'UND_ERR_SOCKET') throw err;
    return fetch(url, init);
  }
}

async function main(): Promise<void> {
  const { PORT, BASE, ENV } = benchTarget('bu');
  const dir = await mkdtemp(join(tmpdir(), 'tapyard-bench-uploads-'));
  // BENCH_NODE_OPTIONS: flags for the apps instead of the deployed ones (e.g. `--cpu-prof` to profile them).
  const flags = process.env.BENCH_NODE_OPTIONS;
  // BENCH_APP_ENV: extra settings for both apps, as `A=1,B=2` (e.g. WORKER_CONCURRENCY=16).
  const settings = Object.fromEntries(
    (process.env.BENCH_APP_ENV ?? '')
      .split(',')
      .filter(Boolean)
      .map((kv) => kv.split('=', 2) as [string, string]),
  );
  const heapDir = process.env.BENCH_HEAP_DIR;
  const snapshotRounds = (process.env.BENCH_HEAP_SNAPSHOTS ?? '').split(',').map(Number);
  const inspect = (app: 'api' | 'worker', offset: number): Record<string, string> =>
    heapDir
      ? { NODE_OPTIONS: `${flags ?? deployedNodeOptions(app)} --inspect=127.0.0.1:${PORT + offset}` }
      : {};
  const platform = await startPlatform(
    ENV,
    PORT,
    dir,
    { ...settings, ...(flags ? { NODE_OPTIONS: flags } : {}) },
    { api: inspect('api', 3000), worker: inspect('worker', 6000) },
  );
  const inspectors = heapDir
    ? { api: await Inspector.connect(PORT + 3000), worker: await Inspector.connect(PORT + 6000) }
    : undefined;
  const pg = new Client({ connectionString: DB_URL });
  await pg.connect();
  // The servers' CPU per upload too (the budget of issue 30 counts all four processes): PostgreSQL's
  // postmaster is our backend's parent.
  const { rows: backend } = await pg.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const redis = new Redis(process.env.BENCH_REDIS_URL ?? LOCAL_REDIS_URL);
  const servers = {
    pg: Number((await statFields(backend[0].pid))?.[1]),
    redis: await redisPid(),
  };
  try {
    const names = Array.from({ length: PIPELINES }, (_, i) => `small_${i}`);
    for (const name of names) {
      const res = await fetch(`${BASE}/pipeline`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name,
          source: {
            fileAttributes: { format: 'csv', csvAttributes: { delimiter: ',', header: true } },
            schemaProperties: {
              fields: [
                { name: 'id', type: 'int' },
                { name: 'name', type: 'string' },
                { name: 'amount', type: 'double' },
              ],
            },
          },
          destination: { database: { table: `${name}_${ENV.replace(/[^a-z0-9]/g, '')}` } },
        }),
      });
      if (!res.ok) throw new Error(`pipeline ${name}: ${res.status} ${await res.text()}`);
    }
    const body = csv(ROWS);
    const warmups = WARMUP * PIPELINES;
    for (let i = 0; i < warmups; i++) {
      const form = new FormData();
      form.set('pipeline', names[i % PIPELINES]);
      form.set('file', new Blob([body], { type: 'text/csv' }), 'small.csv');
      const res = await send(`${BASE}/pipeline/upload`, { method: 'POST', body: form });
      if (!res.ok) throw new Error(`warm-up upload ${i}: ${res.status} ${await res.text()}`);
      const token = (await res.text()).trim();
      while (
        (
          await pg.query(
            `SELECT 1 FROM tapyard.jobs WHERE environment = $1 AND pipeline_token = $2 AND ended_at IS NOT NULL`,
            [ENV, token],
          )
        ).rowCount === 0
      )
        await sleep(5);
    }
    const memory: Array<{ api: number; worker: number }> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const tokens: string[] = [];
      const answers: number[] = [];
      let next = 0;
      let uploading = true;
      // Status pollers: the rollup of a recent upload, as a dashboard would ask for it.
      const pollers = Array.from({ length: POLLERS }, async () => {
        while (uploading) {
          const token = tokens[Math.max(0, tokens.length - 1 - Math.floor(Math.random() * 20))];
          if (token)
            await send(`${BASE}/pipeline/status?pipelinetoken=${token}&withrollup=true`).then((r) =>
              r.text(),
            );
          else await sleep(5);
        }
      });
      const cpuBefore = {
        api: await cpuSeconds(platform.api.pid),
        worker: await cpuSeconds(platform.worker.pid),
        pg: await treeCpuSeconds(servers.pg),
        backends: await appBackendsCpuSeconds(pg, [platform.api.pid, platform.worker.pid]),
        redis: await treeCpuSeconds(servers.redis),
      };
      const countsBefore = { xacts: await transactions(pg), calls: await redisCalls(redis) };
      const selfBefore = process.cpuUsage();
      const machineBefore = machineBusySeconds();
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          for (let i = next++; i < UPLOADS; i = next++) {
            const form = new FormData();
            form.set('pipeline', names[i % PIPELINES]);
            form.set('file', new Blob([body], { type: 'text/csv' }), 'small.csv');
            const t = performance.now();
            const res = await send(`${BASE}/pipeline/upload`, { method: 'POST', body: form });
            const text = await res.text();
            if (!res.ok) throw new Error(`upload ${i}: ${res.status} ${text}`);
            answers.push(performance.now() - t);
            tokens.push(text.trim());
          }
        }),
      );
      const uploadSeconds = (performance.now() - started) / 1000;
      // The upload phase's CPU budget: pickup stays short only if the jobs keep pace with the uploads,
      // so what the intake side (this process's clients and pollers, the API, the servers) leaves of
      // the machine is the jobs' share.
      const self = process.cpuUsage(selfBefore);
      const phase = {
        machine: machineBusySeconds() - machineBefore,
        bench: (self.user + self.system) / 1e6,
        api: (await cpuSeconds(platform.api.pid)) - cpuBefore.api,
        worker: (await cpuSeconds(platform.worker.pid)) - cpuBefore.worker,
        pg: (await treeCpuSeconds(servers.pg)) - cpuBefore.pg,
        redis: (await treeCpuSeconds(servers.redis)) - cpuBefore.redis,
      };
      const jobsInPhase = Number(
        (
          await pg.query<{ n: string }>(
            `SELECT count(*) AS n FROM tapyard.jobs WHERE environment = $1 AND ended_at IS NOT NULL`,
            [ENV],
          )
        ).rows[0].n,
      );
      uploading = false;
      await Promise.all(pollers);

      // Every job ends; each one's pickup comes from its own status events.
      for (;;) {
        const { rows } = await pg.query<{ ended: string; failed: string }>(
          `SELECT count(*) FILTER (WHERE ended_at IS NOT NULL) AS ended,
                count(*) FILTER (WHERE ended_at IS NOT NULL AND status <> 'success') AS failed
           FROM tapyard.jobs WHERE environment = $1`,
          [ENV],
        );
        if (Number(rows[0].failed) > 0)
          throw new Error(`${rows[0].failed} small uploads did not end success`);
        if (Number(rows[0].ended) >= warmups + UPLOADS * round) break;
        await sleep(100);
      }
      const allDoneSeconds = (performance.now() - started) / 1000;
      // CPU per upload is what a loaded machine does not blur: the run's times stretch, its CPU does not.
      const cpu = {
        api: (await cpuSeconds(platform.api.pid)) - cpuBefore.api,
        worker: (await cpuSeconds(platform.worker.pid)) - cpuBefore.worker,
        pg: (await treeCpuSeconds(servers.pg)) - cpuBefore.pg,
        // Backends opened during the round count from zero.
        backends:
          (await appBackendsCpuSeconds(pg, [platform.api.pid, platform.worker.pid])) - cpuBefore.backends,
        redis: (await treeCpuSeconds(servers.redis)) - cpuBefore.redis,
      };
      // Counted once every job ended, on servers other sessions may use too: a ceiling, per upload.
      const xacts = (await transactions(pg)) - countsBefore.xacts;
      const calls = [...(await redisCalls(redis))]
        .map(([cmd, n]) => [cmd, n - (countsBefore.calls.get(cmd) ?? 0)] as const)
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1]);
      const { rows: pickups } = await pg.query<{ ms: string }>(
        `SELECT (min(epoch) FILTER (WHERE process_name = 'JobRunner' AND state = 'begin')
             - min(epoch) FILTER (WHERE process_name = 'StreamNotifier' AND state = 'end')) AS ms
         FROM tapyard.status_events WHERE environment = $1 AND pipeline_token = ANY($2) GROUP BY pipeline_token`,
        [ENV, tokens],
      );
      const pickup = pickups
        .map((r) => Number(r.ms))
        .filter(Number.isFinite)
        .sort((a, b) => a - b);
      answers.sort((a, b) => a - b);
      console.log(
        `${ROUNDS > 1 ? `round ${round}: ` : ''}small uploads: ${UPLOADS} × ${ROWS} rows, ${CLIENTS} clients, ${PIPELINES} pipelines, ${POLLERS} status pollers; the API at niceness ${deployedApiNice()} (as scripts/up runs it)`,
      );
      console.log(
        `  ${(UPLOADS / uploadSeconds).toFixed(0)} uploads/s; answer p50 ${quantile(answers, 0.5).toFixed(0)} ms, ` +
          `p95 ${quantile(answers, 0.95).toFixed(0)} ms; every job ended after ${allDoneSeconds.toFixed(1)} s ` +
          `(${(UPLOADS / allDoneSeconds).toFixed(0)} jobs/s)`,
      );
      const cores = availableParallelism();
      console.log(
        `  upload phase (${uploadSeconds.toFixed(1)} s, ${(cores * uploadSeconds).toFixed(1)} CPU s on ${cores} cores): ` +
          `machine busy ${phase.machine.toFixed(1)} s (${((100 * phase.machine) / (cores * uploadSeconds)).toFixed(0)} %): ` +
          `bench clients ${phase.bench.toFixed(1)}, API ${phase.api.toFixed(1)}, PostgreSQL ${phase.pg.toFixed(1)}, ` +
          `Redis ${phase.redis.toFixed(1)}, worker ${phase.worker.toFixed(1)} s; ` +
          `${Math.max(0, jobsInPhase - warmups - UPLOADS * (round - 1))} of ${UPLOADS} jobs ended in it`,
      );
      console.log(
        `  pickup (StreamNotifier end → JobRunner begin): p50 ${quantile(pickup, 0.5)} ms, p95 ${quantile(pickup, 0.95)} ms`,
      );
      console.log(
        `  CPU: API ${cpu.api.toFixed(1)} s, worker ${cpu.worker.toFixed(1)} s ` +
          `(${((cpu.api * 1000) / UPLOADS).toFixed(1)} and ${((cpu.worker * 1000) / UPLOADS).toFixed(1)} ms per upload); ` +
          `PostgreSQL ${cpu.pg.toFixed(1)} s (the apps' backends ${cpu.backends.toFixed(1)} s), Redis ${cpu.redis.toFixed(1)} s ` +
          `(${((cpu.pg * 1000) / UPLOADS).toFixed(1)} (${((cpu.backends * 1000) / UPLOADS).toFixed(1)}) and ` +
          `${((cpu.redis * 1000) / UPLOADS).toFixed(1)} ms per upload; servers shared with other sessions)`,
      );
      const perUpload = (n: number): string => (n / UPLOADS).toFixed(1);
      console.log(
        `  per upload: ${perUpload(xacts)} PostgreSQL transactions, ` +
          `${perUpload(calls.reduce((a, [, n]) => a + n, 0))} Redis commands (` +
          `${calls
            .slice(0, 24)
            .map(([cmd, n]) => `${cmd} ${perUpload(n)}`)
            .join(', ')})`,
      );
      if (ROUNDS > 1) {
        await sleep(SETTLE_MS);
        const m = { api: await rssMb(platform.api.pid), worker: await rssMb(platform.worker.pid) };
        memory.push(m);
        console.log(
          `  round ${round}: API ${m.api.toFixed(0)} MB, worker ${m.worker.toFixed(0)} MB resident after ${SETTLE_MS / 1000} s idle`,
        );
        for (const [app, inspector] of Object.entries(inspectors ?? {})) {
          const h = await inspector.heapAfterGc();
          console.log(
            `  ${app} after a full GC: heap ${h.heapUsedMb.toFixed(1)} MB, external ${h.externalMb.toFixed(1)} MB ` +
              `(array buffers ${h.arrayBuffersMb.toFixed(1)}), RSS ${h.rssMb.toFixed(0)} MB`,
          );
          if (heapDir && snapshotRounds.includes(round))
            await inspector.snapshot(join(heapDir, `${app}-round${round}.heapsnapshot`));
        }
      }
    }
    console.log(`goal: ≥ 250 uploads/s with p95 < 300 ms, pickup p95 < 50 ms`);
    if (memory.length > 2) {
      // Round 1 warms caches and pools; growth is judged from round 2 on.
      const [from, to] = [memory[1], memory[memory.length - 1]];
      console.log(
        `memory from round 2 to round ${memory.length}: API ${(to.api - from.api).toFixed(0)} MB, ` +
          `worker ${(to.worker - from.worker).toFixed(0)} MB (goal: no growth)`,
      );
    }
  } finally {
    for (const inspector of Object.values(inspectors ?? {})) inspector.close();
    await pg.end();
    redis.disconnect();
    await platform.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

checkComparable();
main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
