/**
 * `npm run bench:taps` — what running a tap costs. Starts its own API and worker (built apps) on
 * loopback in a fresh environment and prints:
 * - the overhead of an empty tap (`fetch(): return []`) with a warm venv: p50/p95 of BENCH_TAP_RUNS
 *   (default 20) `POST /tap/run` calls, next to a bare JSON route of the same app;
 * - rows/s of a tap yielding BENCH_TAP_ROWS (default 1,000,000) rows into Postgres, from the run call
 *   until the publisher token's rollup is done, against the upload path for the same rows (the same
 *   values as a CSV, uploaded and loaded into an identical pipeline) in the same run.
 * Asserts nothing.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import {
  DB_URL,
  benchPipeline,
  benchTarget,
  postJson,
  sleep,
  startPlatform,
  uploadFile,
  waitForRollup,
  writeCsv,
} from './support';
import { checkComparable } from './support';

const RUNS = Number(process.env.BENCH_TAP_RUNS ?? 20);
const ROWS = Number(process.env.BENCH_TAP_ROWS ?? 1_000_000);
const { PORT, BASE, ENV } = benchTarget('benchtap');
/** The interpreter the platform uses by default (TAP_PYTHON). */
const PYTHON = process.env.TAP_PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');

/** The rows of writeCsv, generated in Python: same values, same order. */
const ROWS_SCRIPT = `
def fetch():
    for i in range(1, ${ROWS} + 1):
        d = 1 + i % 28
        yield {
            "id": i,
            "customer": f"customer-{i % 50000}",
            "zip": f"{i % 99999:05d}",
            "amount": round(i * 1.37, 2),
            "qty": i % 1000,
            "sold_on": f"2026-03-{d:02d}",
            "sold_at": f"2026-03-{d:02d}T12:{i % 60:02d}:00Z",
            "paid": i % 2 == 0,
            "note": f"note {i}, with a comma",
        }
`;

/** User + system CPU seconds a process has used so far (Linux). */
function cpuSeconds(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = process.hrtime.bigint();
  const value = await work();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

interface Run {
  status: string;
  error: string | null;
  publisherToken?: string;
  recordCount: number;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'tapyard-bench-taps-'));
  const pg = new Client({ connectionString: DB_URL });
  await pg.connect();
  const platform = await startPlatform(ENV, PORT, dir, { TAP_VENV_DIR: join(dir, 'venvs') });
  try {
    await pg.query('CREATE SCHEMA IF NOT EXISTS bench_taps');

    // Empty tap: the first run builds the (empty) venv; the measured runs find it warm.
    const empty = 'def fetch():\n    return []\n';
    await postJson(`${BASE}/tap`, { name: 'empty_warm', script: empty });
    await postJson(`${BASE}/tap/run`, { name: 'empty_warm', mode: 'run' });
    const runs: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      // A tap of its own per run: a second run of one tap within 5 s is debounced (spec).
      await postJson(`${BASE}/tap`, { name: `empty_${i}`, script: empty });
      const r = await timed(() => postJson<Run>(`${BASE}/tap/run`, { name: `empty_${i}`, mode: 'run' }));
      if (r.value.status !== 'success') throw new Error(`empty tap: ${JSON.stringify(r.value)}`);
      runs.push(r.ms);
      bare.push((await timed(async () => (await fetch(`${BASE}/version`)).arrayBuffer())).ms);
    }
    runs.sort((a, b) => a - b);
    bare.sort((a, b) => a - b);
    console.log(
      `empty tap run (warm venv), ${RUNS} runs: p50 ${quantile(runs, 0.5).toFixed(0)} ms, ` +
        `p95 ${quantile(runs, 0.95).toFixed(0)} ms (goal p50 < 300 ms); bare route p50 ${quantile(bare, 0.5).toFixed(1)} ms`,
    );

    // The same rows through the upload path and through a tap.
    await benchPipeline(BASE, {
      name: 'bench_upload',
      schema: 'bench_taps',
      table: `up_${ENV.replace(/-/g, '_')}`,
    });
    await benchPipeline(BASE, {
      name: 'bench_tap',
      schema: 'bench_taps',
      table: `tap_${ENV.replace(/-/g, '_')}`,
    });
    const warm = join(dir, 'warm.csv');
    await writeCsv(warm, 10_000);
    await waitForRollup(BASE, `pipelinetoken=${await uploadFile(BASE, warm, 'bench_upload')}`);

    const file = join(dir, 'rows.csv');
    await writeCsv(file, ROWS);
    const cpu0 = { api: cpuSeconds(platform.api.pid), worker: cpuSeconds(platform.worker.pid) };
    const up = await timed(async () => {
      const token = await uploadFile(BASE, file, 'bench_upload');
      await waitForRollup(BASE, `pipelinetoken=${token}`);
    });
    const cpu1 = { api: cpuSeconds(platform.api.pid), worker: cpuSeconds(platform.worker.pid) };
    await postJson(`${BASE}/tap`, { name: 'rows', script: ROWS_SCRIPT, targetPipeline: 'bench_tap' });
    const tap = await timed(async () => {
      const run = await timed(() => postJson<Run>(`${BASE}/tap/run`, { name: 'rows', mode: 'run' }));
      if (run.value.status !== 'success' || !run.value.publisherToken)
        throw new Error(`rows tap: ${JSON.stringify(run.value)}`);
      const rest = await timed(() => waitForRollup(BASE, `publishertoken=${run.value.publisherToken}`));
      return { scriptMs: run.ms, drainMs: rest.ms };
    });
    const cpu2 = { api: cpuSeconds(platform.api.pid), worker: cpuSeconds(platform.worker.pid) };
    const cpu = (a: number, b: number) => (b - a).toFixed(2);
    console.log(
      `  CPU seconds, upload: API ${cpu(cpu0.api, cpu1.api)}, worker ${cpu(cpu0.worker, cpu1.worker)}; ` +
        `tap: API ${cpu(cpu1.api, cpu2.api)}, worker ${cpu(cpu1.worker, cpu2.worker)} (the script's own CPU not included)`,
    );
    const count = async (t: string) =>
      (await pg.query(`SELECT count(*)::int AS n FROM bench_taps.${t}_${ENV.replace(/-/g, '_')}`)).rows[0]
        .n as number;
    const upRps = ROWS / (up.ms / 1000);
    const tapRps = ROWS / (tap.ms / 1000);
    console.log(
      `upload path:  ${upRps.toFixed(0)} rows/s (${(up.ms / 1000).toFixed(2)} s, ${await count('up')} rows)`,
    );
    console.log(
      `tap → table:  ${tapRps.toFixed(0)} rows/s (${(tap.ms / 1000).toFixed(2)} s, ${await count('tap')} rows)`,
    );
    console.log(
      `  (script and stream: ${(tap.value.scriptMs / 1000).toFixed(2)} s; load finishing after the script: ` +
        `${(tap.value.drainMs / 1000).toFixed(2)} s)`,
    );
    console.log(`ratio (goal ≥ 0.7): ${(tapRps / upRps).toFixed(2)}`);
    // The floor: the same script generating and JSON-encoding its rows with no platform at all.
    const floor = await timed(async () =>
      execFileSync(PYTHON, [
        '-c',
        `${ROWS_SCRIPT}\nimport json\nenc = json.JSONEncoder(separators=(",", ":")).encode\nfor r in fetch(): enc(r)\n`,
      ]),
    );
    console.log(
      `  the script alone (generate + JSON-encode ${ROWS} rows, no platform): ${(floor.ms / 1000).toFixed(2)} s, ` +
        `so a tap here cannot beat ratio ${(up.ms / floor.ms).toFixed(2)}`,
    );
    await sleep(100);
  } finally {
    await platform.stop();
    await pg.query('DROP SCHEMA IF EXISTS bench_taps CASCADE').catch(() => undefined);
    await pg.end();
    await rm(dir, { recursive: true, force: true });
  }
}

checkComparable();
main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
