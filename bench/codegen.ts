/**
 * `npm run bench:codegen` — what a CodeGen script costs a load: the same narrow file (BENCH_CODEGEN_ROWS,
 * default 200,000 rows) uploaded into four pipelines of the same run, on the validating path
 * (CSV_FAST_PATH=false, so the baseline does the same per-row work but the script):
 * - no script (the baseline);
 * - a data-quality script that passes every row (`check`);
 * - a transformation script that passes every row through unchanged (`transform`: the goal's pass-through);
 * - a transformation script that adds a column (`transform`, for reference: more work than a pass-through,
 *   in Python and in the table).
 * The scripts are written by a loopback server speaking the OpenAI protocol (the model is a paid API: a
 * stand-in answers with fixed scripts). Starts its own API and worker (built apps). The four loads run
 * in turn BENCH_CODEGEN_ROUNDS times (default 5: with 2 the pass-through read 0.68, 0.77 and 0.95 in one
 * hour, with 5 0.81 and 0.82) and each keeps its fastest, so a busy spell of a shared machine weighs on all
 * four alike; each starts BENCH_CODEGEN_SETTLE_MS (default 1000) after the previous
 * one ended, so what the worker does after a job is no part of the next; the load average is printed beside
 * the figures. Prints rows/s and ratios, and the CPU time of the worker with its sandboxed scripts per load
 * (what a script costs when the machine has no core to spare for it) by part: main thread, stage threads
 * (negative when a thread let go took its CPU with it) and the sandboxes reaped, then the machine's CPU by process
 * in each fastest load (a sandbox's Python is counted under `bwrap`, which reaps it, or under the reaper of
 * orphans, `process_api` on this VM), and the worker's RSS 1 s and 6 s after the last load (its stage threads
 * collect a large job's heap once idle 3 s); asserts nothing.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DB_URL,
  NARROW_COLUMNS,
  benchTarget,
  cpuSeconds,
  cpuByProcess,
  machineBusySeconds,
  rssMb,
  sleep,
  startPlatform,
  threadCpuSeconds,
  uploadFile,
  secondsToDone,
  writeCsv,
} from './support';
import { checkComparable } from './support';

const ROWS = Number(process.env.BENCH_CODEGEN_ROWS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_CODEGEN_ROUNDS ?? 5);
/**
 * A pause before each load: what the worker does after a job (a stage thread let go for its heap and its
 * replacement loading its modules, sandboxes exiting, warm ones starting) lands in none of the loads.
 */
const SETTLE_MS = Number(process.env.BENCH_CODEGEN_SETTLE_MS ?? 1000);
const { PORT, BASE, ENV } = benchTarget('benchcg');

const CHECK = 'def check(rows):\n    return [None] * len(rows)\n';
const TRANSFORM =
  'OUTPUT_COLUMNS = {"amount2": "double"}\n\n' +
  'def transform(rows):\n    return [dict(r, amount2=None if r["amount"] is None else r["amount"] * 2) for r in rows]\n';
const PASS_THROUGH = 'OUTPUT_COLUMNS = {}\n\ndef transform(rows):\n    return rows\n';

/** Answers every chat completion with the script its prompt asks for. */
async function modelStandIn(): Promise<{ url: string; address: string; close: () => void }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const script = !(body.includes('OUTPUT_COLUMNS') && body.includes('transform'))
        ? CHECK
        : body.includes('unchanged')
          ? PASS_THROUGH
          : TRANSFORM;
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: randomUUID(),
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: 'bench',
          choices: [
            {
              index: 0,
              finish_reason: 'stop',
              message: { role: 'assistant', content: JSON.stringify({ script }) },
            },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/v1`, address: `127.0.0.1:${port}`, close: () => server.close() };
}

async function call(method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function pipeline(name: string, table: string, extra: Record<string, unknown>): Promise<void> {
  await call('POST', '/pipeline', {
    name,
    source: { schemaProperties: { fields: NARROW_COLUMNS.map(([n, type]) => ({ name: n, type })) } },
    destination: { database: { dbName: new URL(DB_URL).pathname.slice(1), schema: 'bench_codegen', table } },
    ...extra,
  });
}

async function ready(name: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const e = (await call('GET', `/pipelines/${name}/codegen-scripts`)) as Record<
      string,
      { status: string } | null
    >;
    if (Object.values(e).every((x) => x === null || x.status === 'ready')) return;
    await sleep(100);
  }
  throw new Error(`the scripts of ${name} did not become ready`);
}

interface Figures {
  wall: number;
  cpu: number;
  /** The whole machine's busy cores over the load (1 = one core's worth): 2 here means no core was left. */
  cores: number;
  /** Where the worker's CPU went: its main thread, its stage threads, its reaped sandboxes (the scripts). */
  main: number;
  stages: number;
  scripts: number;
  /** CPU seconds by process over the load, machine-wide (the sandboxes' Python among them). */
  byProcess: Map<string, number>;
}

/** The worker's CPU seconds by part (see Figures); a part is the sum of its threads or children. */
async function cpuParts(worker: number): Promise<Omit<Figures, 'wall' | 'cores' | 'byProcess'>> {
  const threads = await threadCpuSeconds(worker);
  const stat = await readFile(`/proc/${worker}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    cpu: await cpuSeconds(worker),
    main: threads.get('MainThread') ?? 0,
    stages: threads.get('WorkerThread') ?? 0,
    // cutime + cstime: the sandboxes the worker reaped (its scripts, each with its start).
    scripts: (Number(fields[13]) + Number(fields[14])) / 100,
  };
}

async function load(file: string, name: string, worker: number): Promise<Figures> {
  await sleep(SETTLE_MS);
  const before = await cpuParts(worker);
  const busy = machineBusySeconds();
  const processes = cpuByProcess(new Map([[worker, 'tapyard worker']]));
  const began = Date.now();
  const token = await uploadFile(BASE, file, name);
  const wall = await secondsToDone(BASE, `pipelinetoken=${token}`, began);
  // The machine's busy time is read when a poll saw the end: over that span.
  const cores = (machineBusySeconds() - busy) / ((Date.now() - began) / 1000);
  const byProcess = processes();
  const after = await cpuParts(worker);
  return {
    wall,
    cores,
    byProcess,
    cpu: after.cpu - before.cpu,
    main: after.main - before.main,
    stages: after.stages - before.stages,
    scripts: after.scripts - before.scripts,
  };
}

/** The least wall and CPU time of the two loads; the CPU's parts are those of the faster load. */
function best(a: Figures, b: Figures): Figures {
  const faster = b.wall < a.wall ? b : a;
  return { ...faster, wall: Math.min(a.wall, b.wall), cpu: Math.min(a.cpu, b.cpu) };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'tapyard-bench-codegen-'));
  const model = await modelStandIn();
  const platform = await startPlatform(
    ENV,
    PORT,
    dir,
    { CSV_FAST_PATH: 'false', TAP_EGRESS_ALLOW: model.address },
    // BENCH_NODE_OPTIONS: the worker's flags instead of the deployed ones (`--cpu-prof` to profile it).
    process.env.BENCH_NODE_OPTIONS ? { worker: { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } } : {},
  );
  try {
    await call('PUT', '/secrets/ai', { provider: 'openai-compatible', baseUrl: model.url, model: 'bench' });
    const file = join(dir, 'narrow.csv');
    await writeCsv(file, ROWS, NARROW_COLUMNS);
    const suffix = ENV.replace(/[^a-z0-9]/g, '_');
    await pipeline('plain', `plain_${suffix}`, {});
    await pipeline('checked', `checked_${suffix}`, { dataQuality: { aiInstruction: 'Let every row pass.' } });
    await pipeline('derived', `derived_${suffix}`, {
      transformation: { aiInstruction: 'Add amount2, twice amount.' },
    });
    await pipeline('passed', `passed_${suffix}`, {
      transformation: { aiInstruction: 'Pass every row through unchanged.' },
    });
    await ready('checked');
    await ready('passed');
    await ready('derived');
    // A first small load of each warms the worker's stage threads and the sandbox's interpreter cache.
    const warm = join(dir, 'warm.csv');
    await writeCsv(warm, 1000, NARROW_COLUMNS);
    const worker = platform.worker.pid as number;
    for (const name of ['plain', 'checked', 'passed', 'derived']) await load(warm, name, worker);

    const load1 = loadavg()[0];
    const none = {
      wall: Infinity,
      cpu: Infinity,
      cores: 0,
      main: 0,
      stages: 0,
      scripts: 0,
      byProcess: new Map(),
    };
    let plain = none;
    let checked = none;
    let passed = none;
    let derived = none;
    for (let round = 0; round < ROUNDS; round++) {
      plain = best(plain, await load(file, 'plain', worker));
      checked = best(checked, await load(file, 'checked', worker));
      passed = best(passed, await load(file, 'passed', worker));
      derived = best(derived, await load(file, 'derived', worker));
    }
    // Goal 2 after large jobs: a stage thread keeps the heap it grew while jobs follow one another and
    // collects it once idle STAGE_THREAD_HEAP_IDLE_MS (3 s).
    await sleep(1000);
    const rssSoon = await rssMb(worker);
    await sleep(5000);
    const rssIdle = await rssMb(worker);
    const cores = availableParallelism();
    console.log(
      `load average: ${load1.toFixed(1)} before, ${loadavg()[0].toFixed(1)} after, on ${cores} cores; best of ${ROUNDS} rounds`,
    );
    const rate = (s: number): string => `${Math.round(ROWS / s).toLocaleString('en-US')} rows/s`;
    const line = (what: string, f: Figures): string =>
      `${what.padEnd(31)}${f.wall.toFixed(2)} s  ${rate(f.wall).padStart(15)}  ratio ${(plain.wall / f.wall).toFixed(2)}` +
      `   worker CPU ${f.cpu.toFixed(2)} s  ratio ${(plain.cpu / f.cpu).toFixed(2)}` +
      ` (main ${f.main.toFixed(2)}, stage threads ${f.stages.toFixed(2)}, sandboxes reaped ${f.scripts.toFixed(2)})` +
      `; machine ${f.cores.toFixed(2)} cores busy`;
    console.log(`rows: ${ROWS.toLocaleString('en-US')} (narrow file, validating path)`);
    console.log(line('no script:', plain));
    console.log(line('data-quality script:', checked));
    console.log(line('transformation, pass-through:', passed));
    console.log(line('transformation (+1 column):', derived));
    // Where the machine's CPU went in each fastest load, by process (the sandboxes' interpreter as python3).
    const names = [...new Set([plain, checked, passed, derived].flatMap((f) => [...f.byProcess.keys()]))]
      .map(
        (n) =>
          [n, Math.max(...[plain, checked, passed, derived].map((f) => f.byProcess.get(n) ?? 0))] as const,
      )
      .filter(([, most]) => most >= 0.02)
      .sort((a, b) => b[1] - a[1])
      .map(([n]) => n);
    console.log(
      `worker RSS after the last load: ${rssSoon.toFixed(0)} MB 1 s after, ${rssIdle.toFixed(0)} MB 6 s after`,
    );
    console.log(`CPU s by process (no script / data-quality / pass-through / +1 column):`);
    for (const n of names)
      console.log(
        `  ${n.padEnd(22)} ${[plain, checked, passed, derived].map((f) => (f.byProcess.get(n) ?? 0).toFixed(2).padStart(5)).join(' / ')}`,
      );
  } finally {
    await platform.stop();
    model.close();
    await rm(dir, { recursive: true, force: true });
  }
}

checkComparable();
main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
