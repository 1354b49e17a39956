/**
 * A job's batches on the validating path of a stage thread (thread-main.ts): read, converted, and
 * through the job's CodeGen scripts. `shared` is the thread's heartbeat and stage array (see
 * StartMessage), null until the first job starts.
 */
import type { WriteStream } from 'node:fs';
import type { BatchBuilder, RowPlan } from '../row-plan';
import { rowObject, rowText, type TypedBatch, safeText } from '@tapyard/model';
import type { RunningScript } from '@tapyard/scripts';
import { Counts, STAGE } from './protocol';
import { RejectSink, convert, newCounts } from './convert';
import { Ahead, Job, SAMPLE_BYTES, SAMPLE_ROWS, ScriptStageError, message, readerOf } from './thread-job';

/**
 * The job's next batch, through its scripts when it has some (null at the end of the input). A
 * scripted job's batches go to the scripts as soon as they are converted, ahead of their turn: Python
 * works on the next batch while this thread hands this one to the loader (the scripts' sessions are
 * pipelined), and the batch after it is converted meanwhile.
 */
export async function nextScripted(j: Job, shared: Int32Array | null): Promise<TypedBatch | null> {
  if (j.scripts.length === 0) {
    const typed = await readTyped(j, j.counts, j.rejects as WriteStream, shared);
    if (typed !== null && !j.sampleFull) keepSample(j, typed);
    return typed;
  }
  const ahead = j.ahead ?? convertAhead(j, shared);
  j.ahead = null;
  if ((await ahead.typed) !== null) j.ahead = convertAhead(j, shared);
  const out = await ahead.scripted;
  join(j, ahead);
  return out;
}

function convertAhead(j: Job, shared: Int32Array | null): Ahead {
  const counts = newCounts();
  const rejects: string[] = [];
  const sink = { write: (line: string) => rejects.push(line) };
  const typed = (async () => {
    // A turn of the event loop first: the answer of the batch before may be waiting to be read.
    await new Promise((resolve) => setImmediate(resolve));
    const batch = await readTyped(j, counts, sink, shared);
    // Before any script sees it: the sample is of the rows as typed.
    if (batch !== null && !j.sampleFull) keepSample(j, batch);
    return batch;
  })();
  const scripted = typed.then((batch) =>
    batch === null ? null : runScripts(j, batch, counts, sink, shared),
  );
  // A failure (a read error, a script's) is that batch's turn's answer, not an unhandled rejection now.
  typed.catch(() => undefined);
  scripted.catch(() => undefined);
  return { typed, scripted, counts, rejects };
}

/** What a batch converted and scripted ahead counted and rejected joins the job's, at its turn. */
function join(j: Job, ahead: Ahead): void {
  const c = ahead.counts;
  j.counts.firstReject ??= c.firstReject;
  j.counts.rows += c.rows;
  j.counts.rejected += c.rejected;
  j.counts.dq += c.dq;
  j.counts.tf += c.tf;
  j.counts.unparsed += c.unparsed;
  for (const line of ahead.rejects) (j.rejects as WriteStream).write(line);
}

async function readTyped(
  j: Job,
  counts: Counts,
  rejects: RejectSink,
  shared: Int32Array | null,
): Promise<TypedBatch | null> {
  const plan = j.plan as RowPlan;
  let batch = j.first;
  j.first = null;
  if (batch === null) {
    const r = await readerOf(j).next();
    if (r.done) return null;
    batch = r.value;
  }
  const reasons = j.validator ? await j.validator(batch.rows.map((r) => r[0] ?? '')) : null;
  if (shared !== null) shared[STAGE] = 0;
  return convert(batch, plan, counts, rejects, reasons, j.spin, j.builder as BatchBuilder);
}

async function runScripts(
  j: Job,
  typed: TypedBatch,
  counts: Counts,
  rejects: RejectSink,
  shared: Int32Array | null,
): Promise<TypedBatch> {
  for (const script of j.scripts) typed = await runScript(script, typed, counts, rejects, shared);
  return typed;
}

/** One batch through a CodeGen script; the rows it rejects go to the rejects with its reason. */
async function runScript(
  script: RunningScript,
  typed: TypedBatch,
  counts: Counts,
  rejects: RejectSink,
  shared: Int32Array | null,
): Promise<TypedBatch> {
  const stage = script.stage;
  if (shared !== null) shared[STAGE] = stage === 'DataQuality' ? 0 : 1;
  let out;
  try {
    out = await script.apply(typed);
  } catch (err) {
    throw new ScriptStageError(stage, `the ${script.name} script failed: ${message(err)}`);
  }
  for (let k = 0; k < out.rejects.rows.length; k++) {
    const row = out.rejects.rows[k];
    const reason = out.rejects.reasons[k];
    counts.firstReject ??= `line ${typed.lines[row]}: ${reason}`;
    counts.rejected++;
    if (stage === 'DataQuality') counts.dq++;
    else counts.tf++;
    rejects.write(
      JSON.stringify({
        line: typed.lines[row],
        stage,
        reason: safeText(reason),
        raw: safeText(rowText(typed, row)),
      }) + '\n',
    );
  }
  return out.batch;
}

function keepSample(j: Job, typed: TypedBatch): void {
  for (let r = 0; r < typed.lines.length; r++) {
    const row = rowObject(typed, r);
    // JSON has no BigInt: the digits travel as text, which the dry run coerces back.
    for (const [k, v] of Object.entries(row)) if (typeof v === 'bigint') row[k] = v.toString();
    const bytes = JSON.stringify(row).length;
    // Wide rows: fewer of them, so the sample stays small metadata whatever the data holds.
    if (j.sample.length >= SAMPLE_ROWS || j.sampleBytes + bytes > SAMPLE_BYTES) {
      j.sampleFull = true;
      return;
    }
    j.sampleBytes += bytes;
    j.sample.push(row);
  }
}
