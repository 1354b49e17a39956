/**
 * Entry of a stage thread (worker_threads): reads one job's input at a time and runs DataQuality
 * and Transformation on it, batch by batch, on request of the job's runner. Its event loop bumps a
 * heartbeat every 100 ms; a stage stuck in synchronous work stops it, and the runner's watchdog then
 * terminates the thread (stage-thread.ts). Only the one job in this thread is lost.
 */
import 'reflect-metadata';
import { WriteStream, createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { getHeapStatistics } from 'node:v8';
import { parentPort } from 'node:worker_threads';
import { FatalReadError, RecordBatch, StreamEndedError } from '@tapyard/readers';
import { BatchBuilder, RowPlan } from '../row-plan';
import type { CsvChunkPayload, Payload } from '@tapyard/destinations';
import { rowObject, rowText, type TypedBatch, safeText } from '@tapyard/model';
import { RunningScript, KIND_STAGES, type ScriptRunSpec } from '@tapyard/scripts';
import { Counts, FromThread, HEARTBEAT, RETIRED, STAGE, StartMessage, ToThread } from './protocol';
import { RecordValidator, RejectSink, convert, newCounts, recordValidator } from './convert';
import { readInput } from './read-input';
import { receiveInput } from './input-channel';
import { FastCsvInput } from './fast-csv';
import { binaryRows, csvEncoderOf, encoderOf, pieces, reuseEncoderMemory } from './encoders';
import { WarmScripts } from './warm-scripts';

interface Job {
  id: number;
  start: StartMessage;
  /** null on the fast path, which reads through `fast`. */
  batches: AsyncGenerator<RecordBatch> | null;
  first: RecordBatch | null;
  plan: RowPlan | null;
  builder: BatchBuilder | null;
  encoders: ((batch: TypedBatch) => Payload[])[];
  /** On the fast path, for an encoder that writes clean CSV chunks itself (CsvEncoderFactory): its CSV form. */
  csvEncoder: ((chunk: CsvChunkPayload) => Iterable<Payload[]>) | null;
  /** The rest of the part being written by csvEncoder, one batch a request. */
  pieces: Iterator<Payload[]> | null;
  /** The encoder module of csvEncoder, which takes back its pieces' memory (null: none). */
  csvModule: string | null;
  /** The memory of the clean chunks `pieces` is writing. */
  piecesOf: ArrayBuffer[];
  /** Staged parts the encoder is done with, to give back to the main thread once nothing here holds them. */
  spent: ArrayBuffer[];
  validator: RecordValidator | null;
  rejects: WriteStream | null;
  counts: Counts;
  spin: ((row: (string | null)[]) => void) | null;
  fast: FastCsvInput | null;
  /** The pipeline's CodeGen scripts, started at plan, in stage order. */
  scripts: RunningScript[];
  /** Scripts started ahead of plan (WarmMessage), by their spec's JSON; plan takes those it runs. */
  warm: Map<string, Promise<RunningScript | null>>;
  /** The specs of the scripts the job started: warm sandboxes for them are ready after it. */
  specs: ScriptRunSpec[];
  /** The next batch, read and converted while the scripts work on this one (see `next`). */
  ahead: Ahead | null;
  /** The first rows as typed, before any script (see FromThread 'end'), and their size as JSON. */
  sample: Record<string, unknown>[];
  sampleBytes: number;
  sampleFull: boolean;
  /** The most heap seen at a batch boundary (see FromThread 'end'). */
  heapBytes: number;
}

/**
 * A batch converted ahead, with what converting it counted and rejected kept apart: they join the
 * job's when the batch's turn comes, so counts and the rejects file read as if converted then.
 */
interface Ahead {
  typed: Promise<TypedBatch | null>;
  /** The batch through the job's scripts, sent to them as soon as it was converted. */
  scripted: Promise<TypedBatch | null>;
  counts: Counts;
  rejects: string[];
}

// Enough rows for evidence to mean something (one row is 0.5 %), few enough to keep as metadata.
const SAMPLE_ROWS = 200;
const SAMPLE_BYTES = 1 << 20;

/** A CodeGen script failed: the job's stage ends with the script's own error. */
class ScriptStageError extends Error {
  constructor(
    readonly stage: 'DataQuality' | 'Transformation',
    message: string,
  ) {
    super(message);
  }
}

const port = parentPort;
if (port === null) throw new Error('thread-main runs only as a worker thread');
let shared: Int32Array | null = null;
let job: Job | null = null;
let jobs = 0;
/** Warm sandboxes for this thread's next jobs. */
const spares = new WarmScripts();

port.on('message', (msg: ToThread) => {
  if (msg.kind === 'warm') {
    startAhead(msg.scripts);
    return;
  }
  if (msg.kind === 'spares') {
    spares.replenish(msg.specs);
    return;
  }
  if (msg.kind === 'retire') {
    // Retired first, so the job's scripts stopped below start no spares.
    const retiring = spares.retire();
    if (job !== null) stopScripts(job);
    void retiring.then(() => port?.postMessage(RETIRED));
    return;
  }
  const current = msg.kind === 'start' ? ++jobs : jobs;
  handle(msg).catch((err: unknown) => {
    if (job !== null) stopScripts(job);
    post(current, failure(err));
  });
});

/** Starts the job's likely scripts before plan; one that fails to start is started again at plan. */
function startAhead(scripts: ScriptRunSpec[]): void {
  const j = job;
  if (j === null || j.plan !== null) return;
  for (const spec of scripts) {
    const key = JSON.stringify(spec);
    if (!j.warm.has(key))
      j.warm.set(
        key,
        takeOrStart(j, spec).catch(() => null),
      );
  }
}

/** The job's script, in a warm sandbox when one is ready (remembered for replenishing after the job). */
function takeOrStart(j: Job, spec: ScriptRunSpec): Promise<RunningScript> {
  j.specs.push(spec);
  return spares.take(spec);
}

/** Kills the job's scripts, those started ahead of plan and not taken included. */
function stopScripts(j: Job): void {
  for (const script of j.scripts.splice(0)) script.kill();
  for (const started of j.warm.values()) void started.then((script) => script?.kill());
  j.warm.clear();
  spares.replenish(j.specs.splice(0));
}

function post(id: number, reply: FromThread): void {
  port?.postMessage({ id, reply });
}

async function handle(msg: ToThread): Promise<void> {
  if (msg.kind === 'start') {
    // The previous job of this thread ended (or failed): its scripts go with it.
    if (job !== null) stopScripts(job);
    if (shared === null) {
      shared = new Int32Array(msg.shared);
      const beat = shared;
      setInterval(() => Atomics.add(beat, HEARTBEAT, 1), 100);
    }
    // Two parts read ahead at most: the sender's window bounds the rest.
    const input = Readable.from(
      msg.input instanceof ArrayBuffer ? [Buffer.from(msg.input)] : receiveInput(msg.input),
      { highWaterMark: 2 },
    );
    const spinOn = msg.spinOn;
    const fast = msg.fast
      ? new FastCsvInput(input, msg.definition.source.fileAttributes.csvAttributes)
      : null;
    job = {
      id: jobs,
      start: msg,
      fast,
      batches: fast ? null : readInput(msg.definition, input, msg.records, msg.filename),
      first: null,
      plan: null,
      builder: null,
      encoders: [],
      csvEncoder: null,
      pieces: null,
      csvModule: null,
      piecesOf: [],
      spent: [],
      validator: null,
      rejects: null,
      counts: newCounts(),
      scripts: [],
      warm: new Map(),
      specs: [],
      ahead: null,
      sample: [],
      sampleBytes: 0,
      sampleFull: false,
      heapBytes: 0,
      spin:
        spinOn === null
          ? null
          : (row) => {
              if (row.some((c) => c !== null && c.includes(spinOn))) {
                // Test hook: a stage that never yields, as a pathological input would make it.
                for (;;) Atomics.add(shared as Int32Array, STAGE, 0);
              }
            },
    };
    if (fast) {
      const header = await fast.header();
      post(job.id, { kind: 'first', header, width: header?.length ?? null });
      return;
    }
    const first = await readerOf(job).next();
    job.first = first.done ? { rows: [], lines: [], errors: [] } : first.value;
    post(job.id, {
      kind: 'first',
      header: job.first.header ?? null,
      width: job.first.rows[0]?.length ?? null,
    });
    return;
  }
  const j = job;
  if (j === null) throw new Error(`'${msg.kind}' before 'start'`);
  if (msg.kind === 'plan') {
    j.plan = new RowPlan(msg.definition, msg.fileColumns, shared === null ? null : shared.subarray(STAGE));
    j.builder = new BatchBuilder(j.plan.outColumns);
    j.fast?.plan(
      msg.fileColumns,
      msg.definition.source.schemaProperties.fields,
      msg.definition.dataQuality.rules,
    );
    let columns = j.plan.outColumns;
    const warmed = new Map(j.warm);
    j.warm.clear();
    for (const spec of msg.scripts) {
      try {
        const key = JSON.stringify(spec);
        const ahead = warmed.get(key);
        warmed.delete(key);
        const script = (ahead && (await ahead)) ?? (await takeOrStart(j, spec));
        j.scripts.push(script);
        columns = script.outColumns(columns);
      } catch (err) {
        for (const started of warmed.values()) void started.then((script) => script?.kill());
        post(j.id, { kind: 'error', cause: 'script', stage: KIND_STAGES[spec.kind], message: message(err) });
        return;
      }
    }
    // Started for a plan that changed (the definition evolved): not this job's scripts.
    for (const started of warmed.values()) void started.then((script) => script?.kill());
    j.encoders = msg.encoders.map((e) => encoderOf(e.module, e.maxBatchRows, columns));
    if (j.fast && msg.encoders.length === 1) {
      const e = msg.encoders[0];
      j.csvEncoder = csvEncoderOf(
        e.module,
        e.maxBatchRows,
        columns,
        msg.fileColumns,
        msg.definition,
        e.shape,
      );
      j.csvModule = e.module;
    }
    if (msg.schema !== null) {
      try {
        j.validator = await recordValidator(
          msg.schema,
          msg.definition.source.fileAttributes.xmlAttributes?.rowElement ?? 'row',
        );
      } catch (err) {
        post(j.id, { kind: 'error', cause: 'schema', message: message(err) });
        return;
      }
    }
    j.rejects = createWriteStream(j.start.rejectsPath);
    post(j.id, { kind: 'planned' });
    return;
  }
  // next
  if (j.plan === null || j.builder === null || j.rejects === null) throw new Error("'next' before 'plan'");
  if (msg.kind === 'next' && msg.spare !== undefined && j.csvModule !== null)
    reuseEncoderMemory(j.csvModule, msg.spare);
  // What the previous batch grew the heap to (the last batch's shows in the final count below).
  j.heapBytes = Math.max(j.heapBytes, getHeapStatistics().total_heap_size);
  if (j.fast) {
    const piece = j.pieces?.next();
    if (piece !== undefined && piece.done !== true) {
      j.counts.binary += binaryRows(piece.value);
      return postBatch(j, [piece.value]);
    }
    j.pieces = null;
    // Every chunk of the part is written: a part buffer none of them went out in is the main thread's again.
    j.spent.push(...j.piecesOf.splice(0).filter((b) => b.byteLength >= SPENT_MIN_BYTES));
    const payloads = await j.fast.next(j.plan, j.builder, j.encoders[0], j.counts, j.rejects);
    if (payloads === null) {
      await close(j.rejects);
      post(j.id, { kind: 'end', counts: j.counts, sample: [], heapBytes: j.heapBytes });
    } else if (j.csvEncoder === null) postBatch(j, [payloads]);
    else {
      // The part's first piece now, the others on the next requests (the loaders start on it meanwhile).
      j.pieces = pieces(payloads, j.csvEncoder);
      for (const p of payloads)
        if (typeof p === 'object' && 'kind' in p && p.kind === 'csv')
          j.piecesOf.push(p.bytes.buffer as ArrayBuffer);
      const first = j.pieces.next();
      const piece = first.done === true ? [] : first.value;
      j.counts.binary += binaryRows(piece);
      postBatch(j, [piece]);
    }
    return;
  }
  const out = await nextScripted(j);
  if (out === null) {
    await close(j.rejects);
    // Every answer is in: the job ends now, while the scripts' sandboxes exit and give back their
    // uid and cgroups (tens of milliseconds, which each job waited for before).
    const scripts = j.scripts.splice(0);
    post(j.id, { kind: 'end', counts: j.counts, sample: j.sample, heapBytes: j.heapBytes });
    for (const script of scripts) void script.close().catch(() => undefined);
    const specs = j.specs.splice(0);
    // Past the bound the pool lets this thread go: spares started here would die unused, so the pool
    // hands their kinds to the thread that replaces it (SparesMessage).
    if (j.heapBytes <= j.start.maxHeapBytes) spares.replenish(specs);
    return;
  }
  postBatch(
    j,
    j.encoders.map((encode) => encode(out)),
  );
}

/**
 * The job's next batch, through its scripts when it has some (null at the end of the input). A
 * scripted job's batches go to the scripts as soon as they are converted, ahead of their turn: Python
 * works on the next batch while this thread hands this one to the loader (the scripts' sessions are
 * pipelined), and the batch after it is converted meanwhile.
 */
async function nextScripted(j: Job): Promise<TypedBatch | null> {
  if (j.scripts.length === 0) {
    const typed = await readTyped(j, j.counts, j.rejects as WriteStream);
    if (typed !== null && !j.sampleFull) keepSample(j, typed);
    return typed;
  }
  const ahead = j.ahead ?? convertAhead(j);
  j.ahead = null;
  if ((await ahead.typed) !== null) j.ahead = convertAhead(j);
  const out = await ahead.scripted;
  join(j, ahead);
  return out;
}

function convertAhead(j: Job): Ahead {
  const counts = newCounts();
  const rejects: string[] = [];
  const sink = { write: (line: string) => rejects.push(line) };
  const typed = (async () => {
    // A turn of the event loop first: the answer of the batch before may be waiting to be read.
    await new Promise((resolve) => setImmediate(resolve));
    const batch = await readTyped(j, counts, sink);
    // Before any script sees it: the sample is of the rows as typed.
    if (batch !== null && !j.sampleFull) keepSample(j, batch);
    return batch;
  })();
  const scripted = typed.then((batch) => (batch === null ? null : runScripts(j, batch, counts, sink)));
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

async function readTyped(j: Job, counts: Counts, rejects: RejectSink): Promise<TypedBatch | null> {
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
): Promise<TypedBatch> {
  for (const script of j.scripts) typed = await runScript(script, typed, counts, rejects);
  return typed;
}

/** One batch through a CodeGen script; the rows it rejects go to the rejects with its reason. */
async function runScript(
  script: RunningScript,
  typed: TypedBatch,
  counts: Counts,
  rejects: RejectSink,
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

function readerOf(j: Job): AsyncGenerator<RecordBatch> {
  if (j.batches === null) throw new Error('a fast-path job has no batch reader');
  return j.batches;
}

/** Smaller buffers are chunks' own copies (a record a part cut), not staged parts: not given back. */
const SPENT_MIN_BYTES = 64 << 10;

/**
 * Bytes travel by transfer (each payload owns its buffers), the rest by copy. Spent part buffers go
 * back with the batch once the fast path's reader holds none of them (it reads in place; a reader that
 * left that path may still read one, so none goes back then).
 */
function postBatch(j: Job, payloads: Payload[][]): void {
  const transfer = new Set<ArrayBuffer>();
  let spent: ArrayBuffer[] | undefined;
  if (j.spent.length > 0 && j.fast?.readsInPlace === true) {
    const fast = j.fast;
    // Detached: it went to the main thread already, as a chunk the encoder handed on as it was.
    spent = j.spent.filter((b) => b.byteLength > 0 && !fast.holds(b));
    j.spent = j.spent.filter((b) => b.byteLength > 0 && fast.holds(b));
    for (const b of spent) transfer.add(b);
  }
  for (const p of payloads.flat()) {
    if (p instanceof Uint8Array) transfer.add(p.buffer as ArrayBuffer);
    else if (typeof p === 'object' && 'kind' in p && (p.kind === 'csv' || p.kind === 'pg-binary'))
      transfer.add(p.bytes.buffer as ArrayBuffer);
    else if (typeof p === 'object' && 'kind' in p && p.kind === 'json-rows')
      for (const a of [p.bytes, p.ends, p.lines]) transfer.add(a.buffer as ArrayBuffer);
  }
  port?.postMessage(
    { id: j.id, reply: { kind: 'batch', payloads, counts: j.counts, spent } satisfies FromThread },
    [...transfer],
  );
}

function failure(err: unknown): FromThread {
  if (err instanceof ScriptStageError)
    return { kind: 'error', cause: 'script', stage: err.stage, message: err.message };
  if (err instanceof StreamEndedError) {
    return { kind: 'error', cause: err.superseded ? 'superseded' : 'aborted', message: err.message };
  }
  return { kind: 'error', cause: err instanceof FatalReadError ? 'read' : 'other', message: message(err) };
}

function message(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}

function close(s: WriteStream): Promise<void> {
  return new Promise((resolve) => (s.closed ? resolve() : s.end(() => resolve())));
}
