/**
 * `npm run bench:ingest` — HTTP upload → Postgres, end to end (to the job's last event as the platform recorded
 * it, not when a status poll saw it), against `psql \copy` of the same file
 * in the same run. Starts its own API and worker (built apps) on loopback in a fresh environment,
 * prints figures; asserts nothing. Options (environment): BENCH_ROWS (default 1,000,000),
 * BENCH_SCALE_CHECK (default 4: a second load of a file that many times larger, for the RSS curve;
 * 0 skips it), BENCH_POLL_SECONDS (default 5), BENCH_MONGO_RECORDS (default 1,000,000: NDJSON into
 * MongoDB vs a bulk insert with the same driver), BENCH_MONGODB_URI, BENCH_OBJECT_STORE_* (for the zipped
 * CSV through FileNotifier vs the uncompressed upload), BENCH_DQ_ROUNDS (default 5: the data-quality
 * rules' load and its baseline, in turn), BENCH_ROUNDS (default 3: rounds of psql and Tapyard on each
 * file, in turn; the ratio is of their medians). BENCH_DQ_ONLY=1 runs only the rules' overhead,
 * BENCH_NARROW_ONLY=1 only the narrow file against psql;
 * BENCH_NODE_OPTIONS replaces the worker's Node flags (e.g. `--cpu-prof --cpu-prof-dir=DIR`),
 * BENCH_API_NODE_OPTIONS the API's.
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { mongo } from 'mongoose';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import {
  BenchColumn,
  COLUMNS,
  DB_URL,
  NARROW_COLUMNS,
  benchPipeline,
  benchTarget,
  cpuByProcess,
  cpuSeconds,
  median,
  threadCpuSeconds,
  sleep,
  startPlatform,
  uploadFile,
  secondsToDone,
  writeCsv,
} from './support';
import { checkComparable } from './support';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const SCALE = Number(process.env.BENCH_SCALE_CHECK ?? 4);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const MONGO_RECORDS = Number(process.env.BENCH_MONGO_RECORDS ?? 1_000_000);
const MONGO_URI = process.env.BENCH_MONGODB_URI ?? 'mongodb://127.0.0.1:27017';
const POLL_SECONDS = Number(process.env.BENCH_POLL_SECONDS ?? 5);
const { PORT, BASE, ENV } = benchTarget('bench');
/** The apps' and the bench's pids, for the CPU by process of each round. */
const LABELS = new Map<number, string>([[process.pid, 'bench']]);
let WORKER_PID = 0;
/** Peak resident set of a process (VmHWM), in MB. */
function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Resets a process's VmHWM (needs the right to write its clear_refs: its owner or root). */
function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

async function ingest(
  file: string,
  pipeline: string,
  filename = 'bench.csv',
  jobs = 1,
): Promise<{ seconds: number; answered: number; token: string }> {
  const began = Date.now();
  // Archives answer with an empty body: follow them by publisher token instead.
  const publisher = `bench-${randomUUID()}`;
  const answer = await uploadFile(BASE, file, pipeline, filename, publisher);
  const answered = (Date.now() - began) / 1000;
  const token = answer || publisher;
  const query = answer ? `pipelinetoken=${answer}` : `publishertoken=${publisher}`;
  return { seconds: await secondsToDone(BASE, query, began, jobs), answered, token };
}

/** Rules of the data-quality overhead run: one of each kind that costs per row (all on the fast path). */
const BENCH_RULES = [
  { type: 'not_null', column: 'id' },
  { type: 'range', column: 'qty', min: 0, max: 1000 },
  { type: 'regex', column: 'zip', pattern: '^\\d{5}$' },
  { type: 'allowed_values', column: 'paid', values: ['true', 'false'] },
];

/** A load's wall and worker CPU seconds, and how many rows went to the destination unparsed. */
interface Timed {
  wall: number;
  cpu: number;
  unparsed: number;
}

async function timedIngest(file: string, pipeline: string, worker: number): Promise<Timed> {
  const cpu = await cpuSeconds(worker);
  const { seconds, token } = await ingest(file, pipeline);
  const spent = (await cpuSeconds(worker)) - cpu;
  const res = await fetch(`${BASE}/pipeline/status?pipelinetoken=${token}`);
  const events = (await res.json()) as { processName: string; state: string; description: string }[];
  const end = events.find((e) => e.processName === 'DataQuality' && e.state === 'end')?.description ?? '';
  const unparsed = Number(/(\d+) of them went to the destination unparsed/.exec(end)?.[1] ?? 0);
  return { wall: seconds, cpu: spent, unparsed };
}

/**
 * The same load through four data-quality rules, which the fast path checks on each field's raw
 * bytes, against the same file on the fast path without rules: BENCH_DQ_ROUNDS (default 5) rounds
 * in turn, each figure the best of its rounds, so a busy spell of a shared machine weighs on both.
 * Fails when a load left the fast path (then the two are not the same work).
 */
async function rulesOverhead(dir: string, file: string, worker: number): Promise<void> {
  const rounds = Number(process.env.BENCH_DQ_ROUNDS ?? 5);
  const suffix = ENV.replace(/-/g, '_');
  await benchPipeline(BASE, { name: 'bench_dq', schema: 'bench', table: `dq_${suffix}`, rules: BENCH_RULES });
  await benchPipeline(BASE, { name: 'bench_norules', schema: 'bench', table: `norules_${suffix}` });
  const warm = join(dir, 'warm-dq.csv');
  await writeCsv(warm, 10_000);
  await ingest(warm, 'bench_norules');
  await ingest(warm, 'bench_dq');
  const load1 = loadavg()[0];
  let plain = { wall: Infinity, cpu: Infinity };
  let checked = plain;
  const best = (a: typeof plain, b: Timed) => ({
    wall: Math.min(a.wall, b.wall),
    cpu: Math.min(a.cpu, b.cpu),
  });
  const pairs = [
    ['bench_norules', (t: Timed) => (plain = best(plain, t))],
    ['bench_dq', (t: Timed) => (checked = best(checked, t))],
  ] as const;
  for (let round = 0; round < rounds; round++) {
    // Each goes first in every other round: a checkpoint or a vacuum that follows one load falls
    // on both in turn.
    for (const [name, keep] of round % 2 === 0 ? pairs : [...pairs].reverse()) {
      const t = await timedIngest(file, name, worker);
      if (t.unparsed !== ROWS)
        throw new Error(`not comparable: ${name} loaded ${t.unparsed} of ${ROWS} rows on the fast path`);
      keep(t);
    }
  }
  const pct = (a: number, b: number): string => `${(((a - b) / b) * 100).toFixed(1)}%`;
  console.log(
    `with ${BENCH_RULES.length} DQ rules on the fast path: ${(ROWS / checked.wall).toFixed(0)} rows/s vs ` +
      `${(ROWS / plain.wall).toFixed(0)} rows/s without them (overhead ${pct(checked.wall, plain.wall)}, goal ≤ 10%); ` +
      `worker CPU ${checked.cpu.toFixed(2)} s vs ${plain.cpu.toFixed(2)} s (${pct(checked.cpu, plain.cpu)}); ` +
      `best of ${rounds} rounds; load average ${load1.toFixed(1)} before, ${loadavg()[0].toFixed(1)} after, ` +
      `on ${availableParallelism()} cores`,
  );
}

/** Requests per second of a GET, from `concurrency` loops for `seconds`. */
async function rps(url: string, seconds: number, concurrency = 16): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const r = await fetch(url);
        await r.arrayBuffer();
        n++;
      }
    }),
  );
  return n / seconds;
}

/**
 * `psql \\copy` of a file into a table of its columns, then the same file uploaded to a pipeline of
 * those columns (after a warm-up load), then, for what the gap is made of, `psql \\copy` into a table
 * like the one Tapyard loaded (its `_tapyard_load_id` filled from the setting a load sets, as Tapyard's
 * loads do): ROUNDS rounds of the three in turn, each into emptied tables, so that a change in the
 * machine's load falls on all three. Prints each round's times and the ratio of the medians (the goal's).
 */
async function againstCopy(
  pg: Client,
  dir: string,
  file: string,
  name: string,
  columns: BenchColumn[],
): Promise<{ seconds: number; token: string }> {
  const bytes = await writeCsv(file, ROWS, columns);
  console.log(`${name} file: ${ROWS} rows, ${columns.length} columns, ${(bytes / 1e6).toFixed(1)} MB`);
  const bare = `bench.baseline_${name}`;
  const loaded = `bench.${name}_${ENV.replace(/-/g, '_')}`;
  const same = `bench.baseline_${name}_load_id`;
  await pg.query(`DROP TABLE IF EXISTS ${bare}`);
  await pg.query(`CREATE TABLE ${bare} (${columns.map(([n, , t]) => `${n} ${t}`).join(', ')})`);
  await benchPipeline(BASE, { name, schema: 'bench', table: loaded.slice('bench.'.length), columns });
  // Warm-up (JIT, pools, table creation) so the measured load is the steady state.
  const warm = join(dir, `warm-${name}.csv`);
  await writeCsv(warm, 10_000, columns);
  await ingest(warm, name);
  await pg.query(`DROP TABLE IF EXISTS ${same}`);
  await pg.query(`CREATE TABLE ${same} (LIKE ${loaded} INCLUDING DEFAULTS)`);
  const timed = (input: string): number => {
    const t0 = process.hrtime.bigint();
    execFileSync('psql', [DB_URL, '-q', '-v', 'ON_ERROR_STOP=1'], { input });
    return Number(process.hrtime.bigint() - t0) / 1e9;
  };
  const copy = (table: string) =>
    `\\copy ${table} (${columns.map(([n]) => n).join(', ')}) FROM '${file}' WITH (FORMAT csv, HEADER true)\n`;
  const psqlTimes: number[] = [];
  const sameTimes: number[] = [];
  const runs: { seconds: number; answered: number; token: string }[] = [];
  const cpu = {
    psql: new Map<string, number>(),
    tapyard: new Map<string, number>(),
    same: new Map<string, number>(),
    workerThreads: new Map<string, number>(),
  };
  const add = (into: Map<string, number>, from: Map<string, number>) => {
    for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v);
  };
  for (let round = 0; round < ROUNDS; round++) {
    await pg.query(`TRUNCATE ${bare}, ${loaded}, ${same}`);
    let since = cpuByProcess(LABELS);
    psqlTimes.push(timed(copy(bare)));
    // The postmaster reaps psql's backend (and so holds its CPU) a moment after psql exits.
    await sleep(300);
    add(cpu.psql, since());
    since = cpuByProcess(LABELS);
    const threads = await threadCpuSeconds(WORKER_PID);
    runs.push(await ingest(file, name));
    await sleep(300);
    add(cpu.tapyard, since());
    for (const [thread, s] of await threadCpuSeconds(WORKER_PID))
      cpu.workerThreads.set(thread, (cpu.workerThreads.get(thread) ?? 0) + s - (threads.get(thread) ?? 0));
    since = cpuByProcess(LABELS);
    sameTimes.push(
      timed(
        `BEGIN;\nSELECT set_config('tapyard.load_id', '${randomUUID()}', true) \\g /dev/null\n${copy(same)}COMMIT;\n`,
      ),
    );
    await sleep(300);
    add(cpu.same, since());
  }
  const seconds = runs.map((r) => r.seconds);
  const [psqlS, tapyardS, sameS] = [median(psqlTimes), median(seconds), median(sameTimes)];
  const list = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(', ');
  console.log(`  psql \\copy:          ${(ROWS / psqlS).toFixed(0)} rows/s (median of ${list(psqlTimes)} s)`);
  console.log(
    `  Tapyard upload→table: ${(ROWS / tapyardS).toFixed(0)} rows/s (median of ${list(seconds)} s; ` +
      `the upload answered after ${list(runs.map((r) => r.answered))} s)`,
  );
  console.log(
    `  ${name} ratio (goal ≥ 0.8): ${(psqlS / tapyardS).toFixed(2)} ` +
      `(by round: ${psqlTimes.map((p, i) => (p / seconds[i]).toFixed(2)).join(', ')})`,
  );
  console.log(
    `  (psql \\copy into a table like Tapyard's, load id included: ${(ROWS / sameS).toFixed(0)} rows/s, ` +
      `median of ${list(sameTimes)} s; Tapyard against it ${(sameS / tapyardS).toFixed(2)})`,
  );
  // Where each side's CPU went (per round; psql itself is in the bench's share of its rounds).
  const byProcess = (m: Map<string, number>) =>
    [...m]
      .map(([k, v]) => [k, v / ROUNDS] as const)
      .filter(([, v]) => v >= 0.02)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v.toFixed(2)}`)
      .join(', ');
  console.log(`  CPU s per round, psql: ${byProcess(cpu.psql)}`);
  console.log(`  CPU s per round, Tapyard: ${byProcess(cpu.tapyard)}`);
  console.log(`  CPU s per round, the worker's threads: ${byProcess(cpu.workerThreads)}`);
  console.log(`  CPU s per round, psql into the table like Tapyard's: ${byProcess(cpu.same)}`);
  await pg.query(`DROP TABLE ${same}`);
  return runs.find((r) => r.seconds === tapyardS) ?? runs[0];
}

/** Resident set of a process now (VmRSS), in MB. */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/**
 * Resets the worker's VmHWM before a load (Linux sets it to the current RSS on "5" into clear_refs)
 * and returns the line that reports the load's own peak, with the RSS it started from: memory an
 * earlier load left resident (and not yet given back) is in that floor, not in the load's growth.
 */
function peakOf(workerPid: number): () => string {
  const reset = resetPeakRss(workerPid);
  const start = rssMb(workerPid);
  return () =>
    reset
      ? `worker peak RSS during it ${peakRssMb(workerPid).toFixed(0)} MB (from ${start.toFixed(0)} MB at its start)`
      : `worker peak RSS now ${peakRssMb(workerPid).toFixed(0)} MB (could not reset the peak)`;
}

/**
 * A file SCALE times larger through the same pipeline, right after the 1× loads so that the two
 * peaks compare the file's size alone: its rate, and the worker's peak RSS during it.
 */
async function scaleCheck(dir: string, workerPid: number): Promise<void> {
  if (SCALE <= 1) return;
  const bigFile = join(dir, 'bench-big.csv');
  const bigBytes = await writeCsv(bigFile, ROWS * SCALE);
  const peak = peakOf(workerPid);
  const big = await ingest(bigFile, 'bench');
  await rm(bigFile, { force: true });
  console.log(
    `${SCALE}× file (${(bigBytes / 1e6).toFixed(0)} MB): ${((ROWS * SCALE) / big.seconds).toFixed(0)} rows/s; ${peak()}`,
  );
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'tapyard-bench-'));
  const pg = new Client({ connectionString: DB_URL });
  await pg.connect();
  // BENCH_NODE_OPTIONS: Node flags for the worker instead of the deployed ones (`--cpu-prof` to profile it).
  const flags = process.env.BENCH_NODE_OPTIONS;
  const platform = await startPlatform(
    ENV,
    PORT,
    dir,
    { MONGODB_URI: MONGO_URI },
    {
      worker: flags ? { NODE_OPTIONS: flags } : {},
      api: process.env.BENCH_API_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_API_NODE_OPTIONS } : {},
    },
  );
  const worker = platform.worker;
  LABELS.set(platform.api.pid as number, 'api').set(worker.pid as number, 'worker');
  WORKER_PID = worker.pid as number;
  try {
    await sleep(1000);
    await pg.query('CREATE SCHEMA IF NOT EXISTS bench');
    // BENCH_DQ_ONLY=1: only the data-quality rules' overhead on the mixed file.
    if (process.env.BENCH_DQ_ONLY === '1') {
      const file = join(dir, 'bench.csv');
      const bytes = await writeCsv(file, ROWS);
      console.log(`bench file: ${ROWS} rows, ${COLUMNS.length} columns, ${(bytes / 1e6).toFixed(1)} MB`);
      await rulesOverhead(dir, file, worker.pid as number);
      return;
    }
    // BENCH_DOCUMENTS_ONLY=1: only NDJSON into MongoDB (with the worker's peak RSS).
    if (process.env.BENCH_DOCUMENTS_ONLY === '1') {
      await documentsAndArchives(dir, '', 0, worker.pid as number);
      console.log(`worker peak RSS:        ${peakRssMb(worker.pid as number).toFixed(0)} MB (goal < 300)`);
      return;
    }
    // The narrow file first: five short columns, where per-row work is the whole cost.
    const narrowFile = join(dir, 'narrow.csv');
    await againstCopy(pg, dir, narrowFile, 'narrow', NARROW_COLUMNS);
    await rm(narrowFile, { force: true });
    if (process.env.BENCH_NARROW_ONLY === '1') return;
    const file = join(dir, 'bench.csv');
    const quiet = await againstCopy(pg, dir, file, 'bench', COLUMNS);
    console.log(`worker peak RSS:        ${peakRssMb(worker.pid as number).toFixed(0)} MB (goal < 300)`);
    await scaleCheck(dir, worker.pid as number);
    if (process.env.BENCH_RATIOS_ONLY === '1') return;

    // Rollup polling against a bare JSON route of the same app.
    const bare = await rps(`${BASE}/version`, POLL_SECONDS);
    const poll = await rps(
      `${BASE}/pipeline/status?pipelinetoken=${quiet.token}&withrollup=true`,
      POLL_SECONDS,
    );
    console.log(`bare JSON route:        ${bare.toFixed(0)} req/s`);
    console.log(
      `rollup poll:            ${poll.toFixed(0)} req/s (ratio ${(poll / bare).toFixed(2)}, goal ≥ 0.5)`,
    );

    // The same ingest while 20 clients poll the rollup once a second each (the documented pattern is
    // "every few seconds"): how much does polling slow the ingest?
    let polling = true;
    let polls = 0;
    const pollers = Array.from({ length: 20 }, async () => {
      while (polling) {
        await (
          await fetch(`${BASE}/pipeline/status?pipelinetoken=${quiet.token}&withrollup=true`)
        ).arrayBuffer();
        polls++;
        await sleep(1000);
      }
    });
    const busy = await ingest(file, 'bench');
    polling = false;
    await Promise.all(pollers);
    console.log(
      `ingest while polled:    ${(ROWS / busy.seconds).toFixed(0)} rows/s with ${(polls / busy.seconds).toFixed(0)} polls/s ` +
        `(slowdown ${(((busy.seconds - quiet.seconds) / quiet.seconds) * 100).toFixed(1)}%, goal ≤ 10%)`,
    );

    await rulesOverhead(dir, file, worker.pid as number);

    await documentsAndArchives(dir, file, quiet.seconds, worker.pid as number);
  } finally {
    await platform.stop();
    await pg.query('DROP SCHEMA IF EXISTS bench CASCADE').catch(() => undefined);
    await pg.end();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * NDJSON into MongoDB vs a plain bulk insert with the same driver (mongoimport-style: parse, insertMany
 * in batches of 1,000, unordered), and a zipped CSV through FileNotifier vs the uncompressed upload.
 */
async function documentsAndArchives(
  dir: string,
  csv: string,
  uncompressedSeconds: number,
  workerPid: number,
): Promise<void> {
  const ndjson = join(dir, 'bench.ndjson');
  const out = createWriteStream(ndjson);
  for (let i = 0; i < MONGO_RECORDS; i++) {
    const line = `{"id":${i},"customer":{"name":"customer ${i % 977}","tier":${i % 3}},"items":[${i % 7},${i % 11}],"note":"record ${i}"}\n`;
    if (!out.write(line)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  out.end();
  await new Promise<void>((r) => out.once('finish', () => r()));

  const client = await new mongo.MongoClient(MONGO_URI).connect();
  const db = client.db(`bench_${ENV.replace(/-/g, '_')}`);
  try {
    const t0 = process.hrtime.bigint();
    let batch: Record<string, unknown>[] = [];
    const lines = createInterface({ input: createReadStream(ndjson), crlfDelay: Infinity });
    for await (const line of lines) {
      if (!line) continue;
      batch.push(JSON.parse(line) as Record<string, unknown>);
      if (batch.length === 1000) {
        await db.collection('baseline').insertMany(batch, { ordered: false });
        batch = [];
      }
    }
    if (batch.length > 0) await db.collection('baseline').insertMany(batch, { ordered: false });
    const baseline = MONGO_RECORDS / (Number(process.hrtime.bigint() - t0) / 1e9);

    const docsPipeline = {
      name: 'bench_docs',
      source: {
        fileAttributes: { format: 'json' },
        schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
      },
      destination: {
        database: { dbName: db.databaseName, schema: 'x', table: 'loaded', usePostgres: false },
      },
    };
    const saved = await fetch(`${BASE}/pipeline`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(docsPipeline),
    });
    if (!saved.ok) throw new Error(`pipeline: ${saved.status} ${await saved.text()}`);
    const peak = peakOf(workerPid);
    const loaded = await ingest(ndjson, 'bench_docs', 'bench.ndjson');
    const tapyard = MONGO_RECORDS / loaded.seconds;
    console.log(
      `NDJSON → MongoDB (${MONGO_RECORDS} records): ${tapyard.toFixed(0)} records/s vs bulk insert ${baseline.toFixed(0)} records/s (ratio ${(tapyard / baseline).toFixed(2)}); ${peak()}`,
    );
  } finally {
    await db.dropDatabase().catch(() => undefined);
    await client.close();
  }

  if (csv === '') return; // BENCH_DOCUMENTS_ONLY

  // Python's zipfile (Python 3 is on every machine this runs on) writes the zip without holding the file.
  const zipped = join(dir, 'bench.zip');
  execFileSync('python3', [
    '-c',
    'import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z: z.write(sys.argv[2], "bench.csv")',
    zipped,
    csv,
  ]);
  const archived = await ingest(zipped, 'bench', 'bench.zip', 2);
  console.log(
    `zipped CSV via FileNotifier: ${(ROWS / archived.seconds).toFixed(0)} rows/s vs uncompressed upload ` +
      `${(ROWS / uncompressedSeconds).toFixed(0)} rows/s (ratio ${(uncompressedSeconds / archived.seconds).toFixed(2)})`,
  );
}

checkComparable();
main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
