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
import { FatalReadError, StreamEndedError } from '@tapyard/readers';
import { BatchBuilder, RowPlan } from '../row-plan';
import type { Payload } from '@tapyard/destinations';
import { RunningScript, KIND_STAGES, type ScriptRunSpec } from '@tapyard/scripts';
import { FromThread, HEARTBEAT, OVERSIZED, RETIRED, STAGE, ToThread } from './protocol';
import { newCounts, recordValidator } from './convert';
import { readInput } from './read-input';
import { receiveInput } from './input-channel';
import { FastCsvInput } from './fast-csv';
import { binaryRows, csvEncoderOf, encoderOf, pieces, reuseEncoderMemory } from './encoders';
import { WarmScripts } from './warm-scripts';
import { Job, ScriptStageError, message, readerOf } from './thread-job';
import { nextScripted } from './scripted-batches';
import { heapCollector } from './heap-collect';

const port = parentPort;
if (port === null) throw new Error('thread-main runs only as a worker thread');
let shared: Int32Array | null = null;
let job: Job | null = null;
let jobs = 0;
/** Warm sandboxes for this thread's next jobs. */
const spares = new WarmScripts();
/** Gives a large job's heap back (null: this thread cannot, and is let go after such a job). */
const collect = heapCollector();
/** The collection due once this thread has been idle a while after a large job (see giveBackHeap). */
let collecting: NodeJS.Timeout | null = null;

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
    // The previous job of this thread ended (or failed): its scripts go with it. Its heap is this
    // job's to use (a collection now would only make this job grow it again).
    if (job !== null) stopScripts(job);
    if (collecting !== null) clearTimeout(collecting);
    collecting = null;
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
      if (j.csvEncoder !== null) j.fast.readInWindows(CHECK_WINDOW_BYTES);
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
    // Once each: a part read in windows is every window's chunk's buffer, and goes back once.
    for (const b of j.piecesOf.splice(0))
      if (b.byteLength >= SPENT_MIN_BYTES && !j.spent.includes(b)) j.spent.push(b);
    const payloads = await j.fast.next(j.plan, j.builder, j.encoders[0], j.counts, j.rejects);
    if (payloads === null) {
      await close(j.rejects);
      if (end(j, [])) giveBackHeap(j);
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
  const out = await nextScripted(j, shared);
  if (out === null) {
    await close(j.rejects);
    // Every answer is in: the job ends now, while the scripts' sandboxes exit and give back their
    // uid and cgroups (tens of milliseconds, which each job waited for before).
    const scripts = j.scripts.splice(0);
    const collects = end(j, j.sample);
    for (const script of scripts) void script.close().catch(() => undefined);
    const specs = j.specs.splice(0);
    // A thread the pool lets go (its heap past the bound, not collected) would see its spares die unused:
    // the pool hands their kinds to the thread that replaces it (SparesMessage).
    if (collects) giveBackHeap(j);
    if (collects || j.heapBytes <= j.start.maxHeapBytes) spares.replenish(specs);
    return;
  }
  postBatch(
    j,
    j.encoders.map((encode) => encode(out)),
  );
}

/** Posts the job's end; true when its heap passed the bound and the thread will collect it (giveBackHeap). */
function end(j: Job, sample: Record<string, unknown>[]): boolean {
  const collects = collect !== null && j.heapBytes > j.start.maxHeapBytes;
  post(j.id, { kind: 'end', counts: j.counts, sample, heapBytes: j.heapBytes, collects });
  return collects;
}

/**
 * Collects the heap once the thread has been idle `heapIdleMs` after the job (a next job cancels it);
 * when the heap is still past the bound then, the pool is told and lets the thread go.
 */
function giveBackHeap(j: Job): void {
  const { maxHeapBytes, heapIdleMs } = j.start;
  collecting = setTimeout(() => {
    collecting = null;
    collect?.();
    if (getHeapStatistics().total_heap_size > maxHeapBytes) port?.postMessage(OVERSIZED);
  }, heapIdleMs);
}

/**
 * Bytes of a staged part checked at a time when the job's encoder writes its chunks here (see
 * FastCsvInput.readInWindows): some 23,000 narrow rows, a few pieces; at least BINARY_MIN_BYTES, so
 * a binary COPY job decides its format on as much as before.
 */
const CHECK_WINDOW_BYTES = 1 << 20;

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
    // Still read: the reader's part (all its windows), or a part whose chunk's pieces are being written.
    const inUse = (b: ArrayBuffer): boolean => fast.holds(b) || j.piecesOf.includes(b);
    // Detached: it went to the main thread already, as a chunk the encoder handed on as it was.
    spent = j.spent.filter((b) => b.byteLength > 0 && !inUse(b));
    j.spent = j.spent.filter((b) => b.byteLength > 0 && inUse(b));
    for (const b of spent) transfer.add(b);
  }
  // A chunk handed on as it is, read in windows: a view of a part other chunks share, so a copy goes.
  if (j.fast?.windowed === true)
    for (const list of payloads)
      list.forEach((p, i) => {
        if (typeof p === 'object' && 'kind' in p && p.kind === 'csv')
          list[i] = { ...p, bytes: new Uint8Array(p.bytes) };
      });
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

function close(s: WriteStream): Promise<void> {
  return new Promise((resolve) => (s.closed ? resolve() : s.end(() => resolve())));
}
