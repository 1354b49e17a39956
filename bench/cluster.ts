/**
 * `npm run bench:cluster` — the same 20-file CSV load through a cluster of 1, 2 and 4 worker hosts
 * (scripts/cluster: the API, the workers and the services on hosts of their own, sharing only PostgreSQL,
 * Redis and MinIO), against one `psql \copy` stream of the same files into the services host's PostgreSQL.
 * The single file is also copied with psql into a table like the one Tapyard loaded (its load-id column
 * filled per row, as a Tapyard load fills it), printed beside the goal's ratio.
 * Needs root (network namespaces) and a build. Prints figures; asserts nothing. Options (environment):
 * BENCH_ROWS_PER_FILE (default 50,000; 20 files of the nine-column file of bench:ingest), BENCH_FILES
 * (default 20), BENCH_WORKERS (default 1,2,4); PG_COPY_STREAMS is passed to the apps (default 2);
 * BENCH_ROUNDS (default 3: rounds of the single file's psql, Tapyard and like-Tapyard copies in turn; its
 * ratio is of their medians); BENCH_NODE_OPTIONS adds Node flags to the API and worker hosts (e.g. `--cpu-prof --cpu-prof-dir=DIR`, DIR
 * writable inside a host and kept after it: /run/tapyard/<name> is the one shared path the harness binds).
 *
 * The hosts share this machine's cores (printed), so the figures show how the load spreads, not what
 * separate machines would add.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { Cluster, startCluster } from '../test/support/cluster';
import { COLUMNS, median, postJson, uploadFile, waitForRollup, writeCsv } from './support';
import { checkComparable } from './support';

const ROWS_PER_FILE = Number(process.env.BENCH_ROWS_PER_FILE ?? 50_000);
const FILES = Number(process.env.BENCH_FILES ?? 20);
const WORKER_COUNTS = (process.env.BENCH_WORKERS ?? '1,2,4').split(',').map(Number);
const TOTAL_ROWS = ROWS_PER_FILE * FILES;
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));

const seconds = (from: bigint): number => Number(process.hrtime.bigint() - from) / 1e9;

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ). */
const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/**
 * CPU seconds used so far by processes, by name (postgres, minio, node...): each one's own time plus
 * that of its children already gone (a psql session's backend ends with it).
 */
function cpuByName(pids: number[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/:.*$/, '');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime, stime, cutime, cstime: fields 14-17 of stat(5), 11-14 after the name.
      const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
      out.set(name, (out.get(name) ?? 0) + ticks / TICKS);
    } catch {
      // Gone between listing and reading: its time is in its parent's children's time.
    }
  }
  return out;
}

/** CPU seconds per host (and per process name within it) spent while `work` ran. */
async function cpuOf<T>(
  cluster: Cluster,
  hosts: string[],
  work: () => Promise<T>,
): Promise<{ result: T; cpu: Map<string, Map<string, number>> }> {
  const snapshot = async () => {
    const m = new Map<string, Map<string, number>>();
    for (const h of hosts) m.set(h, cpuByName(h === 'client' ? [process.pid] : await cluster.pids(h)));
    return m;
  };
  const before = await snapshot();
  const result = await work();
  const after = await snapshot();
  const cpu = new Map<string, Map<string, number>>();
  for (const [h, names] of after) {
    const d = new Map<string, number>();
    for (const [n, v] of names) d.set(n, v - (before.get(h)?.get(n) ?? 0));
    cpu.set(h, d);
  }
  return { result, cpu };
}

function describeCpu(cpu: Map<string, Map<string, number>>): string {
  return [...cpu]
    .map(([h, names]) => {
      const total = [...names.values()].reduce((a, b) => a + b, 0);
      const parts = [...names].filter(([, v]) => v >= 0.01).map(([n, v]) => `${n} ${v.toFixed(2)}`);
      return `${h} ${total.toFixed(2)}${parts.length > 1 ? ` (${parts.join(', ')})` : ''}`;
    })
    .join('; ');
}

/** Every file uploaded at once under one publisher token; resolves when all their jobs are done. */
async function load(base: string, pipeline: string, files: string[]): Promise<number> {
  const publisher = `bench-${randomUUID()}`;
  const started = process.hrtime.bigint();
  await Promise.all(files.map((f, i) => uploadFile(base, f, pipeline, `part-${i}.csv`, publisher)));
  await waitForRollup(base, `publishertoken=${publisher}`, files.length);
  return seconds(started);
}

/** A pipeline of the benchmark columns into bench.<table> of the services host's `tapyard` database. */
async function pipeline(base: string, name: string): Promise<void> {
  await postJson(`${base}/pipeline`, {
    name,
    source: { schemaProperties: { fields: COLUMNS.map(([n, type]) => ({ name: n, type })) } },
    destination: { database: { dbName: 'tapyard', schema: 'bench', table: name } },
  });
}

/**
 * One psql session copying every file in turn: the single-stream baseline. With `loadId`, into a
 * table like the one Tapyard loaded, in one transaction that sets the load id its column's default
 * reads per row (as a Tapyard load does).
 */
function psqlCopy(databaseUrl: string, files: string[], table = 'bench.baseline', loadId = false): number {
  const started = process.hrtime.bigint();
  const columns = COLUMNS.map(([n]) => n).join(', ');
  const copies = files.map(
    (f) => `\\copy ${table} (${columns}) FROM '${f}' WITH (FORMAT csv, HEADER true)\n`,
  );
  execFileSync('psql', [databaseUrl, '-q', '-v', 'ON_ERROR_STOP=1'], {
    input: loadId
      ? `BEGIN;\nSELECT set_config('tapyard.load_id', '${randomUUID()}', true) \\g /dev/null\n${copies.join('')}COMMIT;\n`
      : copies.join(''),
  });
  return seconds(started);
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'tapyard-bench-cluster-'));
  let cluster: Cluster | null = null;
  try {
    // One file written, the others its copies: the load reads 20 files, generating them once is enough.
    const first = join(dir, 'part-0.csv');
    const bytes = await writeCsv(first, ROWS_PER_FILE, COLUMNS);
    const files = [first];
    for (let i = 1; i < FILES; i++) {
      files.push(join(dir, `part-${i}.csv`));
      execFileSync('cp', [first, files[i]]);
    }
    console.log(
      `${FILES} files × ${ROWS_PER_FILE} rows (${COLUMNS.length} columns, ${((bytes * FILES) / 1e6).toFixed(0)} MB); ` +
        `cores available: ${execFileSync('nproc', { encoding: 'utf8' }).trim()} (os: ${availableParallelism()})`,
    );

    cluster = await startCluster({
      workers: Math.min(...WORKER_COUNTS),
      // The harness waits for the apps' ready lines, which are logged at info.
      // PG_COPY_STREAMS=1 measures the single-stream load against the default's two.
      env: {
        UPLOAD_LIMIT: '20gb',
        ...(process.env.PG_COPY_STREAMS ? { PG_COPY_STREAMS: process.env.PG_COPY_STREAMS } : {}),
        ...(process.env.BENCH_NODE_OPTIONS
          ? { TAPYARD_APP_NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS }
          : {}),
      },
    });
    const base = cluster.apiUrl;
    const pg = new Client({ connectionString: cluster.services.databaseUrl });
    await pg.connect();
    try {
      await pg.query('CREATE SCHEMA IF NOT EXISTS bench');
      await pg.query(`CREATE TABLE bench.baseline (${COLUMNS.map(([n, , t]) => `${n} ${t}`).join(', ')})`);
    } finally {
      await pg.end();
    }
    const psqlSeconds = psqlCopy(cluster.services.databaseUrl, files);
    const psqlRps = TOTAL_ROWS / psqlSeconds;
    console.log(`psql \\copy, one stream: ${psqlRps.toFixed(0)} rows/s (${psqlSeconds.toFixed(2)} s)`);

    const warm = join(dir, 'warm.csv');
    await writeCsv(warm, 1000, COLUMNS);
    // One file of all the rows, uploaded to the API host and loaded by one worker host while it arrives,
    // against one `psql \copy` of the same file: the single-stream figure of the issue.
    const whole = join(dir, 'whole.csv');
    await writeCsv(whole, TOTAL_ROWS, COLUMNS);
    const c = cluster;
    await pipeline(base, 'cluster_single');
    await load(base, 'cluster_single', [warm]);
    const admin = new Client({ connectionString: c.services.databaseUrl });
    await admin.connect();
    type Timed = { result: number; cpu: Map<string, Map<string, number>> };
    type Round = { psql: Timed; tapyard: Timed; same: number; streams: number };
    const rounds: Round[] = [];
    try {
      await admin.query('CREATE TABLE bench.baseline_load_id (LIKE bench.cluster_single INCLUDING DEFAULTS)');
      // Rounds of the three in turn, into emptied tables: a change in the machine's load falls on all.
      for (let r = 0; r < ROUNDS; r++) {
        await admin.query('TRUNCATE bench.baseline, bench.cluster_single, bench.baseline_load_id');
        const psql = await cpuOf(c, ['svc', 'client'], async () => psqlCopy(c.services.databaseUrl, [whole]));
        const tapyard = await cpuOf(c, ['svc', 'api', 'w1', 'client'], () =>
          load(base, 'cluster_single', [whole]),
        );
        // Each COPY stream of a load is a transaction of its own (PG_COPY_STREAMS): how many the file took.
        const { rows } = await admin.query<{ n: number }>(
          `SELECT count(DISTINCT xmin::text)::int AS n FROM bench.cluster_single`,
        );
        // What the gap is made of: psql into a table like Tapyard's, load id included.
        const same = psqlCopy(c.services.databaseUrl, [whole], 'bench.baseline_load_id', true);
        rounds.push({ psql, tapyard, same, streams: rows[0].n });
      }
    } finally {
      await admin.end();
    }
    const psqlS = median(rounds.map((r) => r.psql.result));
    const tapyardS = median(rounds.map((r) => r.tapyard.result));
    const sameS = median(rounds.map((r) => r.same));
    const list = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(', ');
    console.log(
      `one ${TOTAL_ROWS}-row file, API host → 1 worker host: ${(TOTAL_ROWS / tapyardS).toFixed(0)} rows/s vs psql \\copy ` +
        `${(TOTAL_ROWS / psqlS).toFixed(0)} rows/s: ratio ${(psqlS / tapyardS).toFixed(2)} (medians of ${ROUNDS} rounds; ` +
        `by round ${rounds.map((r) => (r.psql.result / r.tapyard.result).toFixed(2)).join(', ')}; ` +
        `seconds psql ${list(rounds.map((r) => r.psql.result))}, Tapyard ${list(rounds.map((r) => r.tapyard.result))})`,
    );
    // What each host spent (the round whose Tapyard time is the median): on machines of their own, the
    // slowest host bounds the load, not the sum.
    const mid = rounds.find((r) => r.tapyard.result === tapyardS) ?? rounds[0];
    console.log(`  CPU seconds, psql \\copy: ${describeCpu(mid.psql.cpu)} (client: psql)`);
    console.log(
      `  CPU seconds, Tapyard: ${describeCpu(mid.tapyard.cpu)} (client: the uploading bench process)`,
    );
    console.log(`  COPY streams of the load (transactions that wrote its rows): ${mid.streams}`);
    console.log(
      `  (psql \\copy into a table like Tapyard's, load id included: ${(TOTAL_ROWS / sameS).toFixed(0)} rows/s, ` +
        `seconds ${list(rounds.map((r) => r.same))}; Tapyard against it ${(sameS / tapyardS).toFixed(2)})`,
    );

    // Each worker count loads into a table of its own, after a small warm-up load (JIT, pools, table).
    for (const workers of [...WORKER_COUNTS].sort((a, b) => a - b)) {
      while (Object.keys((await cluster.refresh()).hosts).filter((h) => h.startsWith('w')).length < workers)
        await cluster.startWorker();
      const name = `cluster_w${workers}`;
      await pipeline(base, name);
      await load(base, name, [warm]);
      const s = await load(base, name, files);
      const rps = TOTAL_ROWS / s;
      console.log(
        `${workers} worker host${workers === 1 ? ' ' : 's'}: ${rps.toFixed(0)} rows/s (${s.toFixed(2)} s), ` +
          `ratio to psql \\copy ${(rps / psqlRps).toFixed(2)}`,
      );
    }
  } finally {
    if (cluster) {
      // The hosts' processes detached from this one: their CPU is the bench's peers', taken before they stop.
      const hosts = ['svc', ...Object.keys((await cluster.refresh()).hosts)];
      machine.countAsPeers((await Promise.all(hosts.map((h) => cluster?.pids(h) ?? []))).flat());
    }
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const machine = checkComparable();
main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
