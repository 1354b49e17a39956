/**
 * The watchdog of a job's CPU-bound stages. Reading the file, DataQuality and Transformation run in a
 * stage thread (thread-main.ts), so the worker's own event loop stays free: it renews BullMQ locks, loads
 * into the destination, takes other jobs and answers SIGTERM whatever the input does. While the runner
 * waits on the thread, it watches the thread's heartbeat; a thread whose event loop makes no progress for
 * STAGE_STALL_MS (a stage stuck in synchronous work on a pathological input) is terminated, and the job
 * ends `error` naming the stage. Threads are pooled per worker process and reused after a clean job. One
 * is started with the worker and another whenever a job's thread is let go, so a job finds a thread that
 * has already loaded its modules (81 files, some 50 ms of CPU: every job of a worker that ran none yet or
 * whose last thread was let go would pay it). A thread that was stopped or abandoned mid-job is never
 * reused. The heap pages a thread grew stay resident while it idles (an idle thread never collects, so
 * V8's memory reducer never runs), so a pooled thread would keep a large job's peak as the worker's
 * floor: after a job whose heap grew past STAGE_THREAD_MAX_HEAP_BYTES the thread stays pooled, its
 * compiled code warm, and runs a memory-reducing collection (heap-collect.ts) once it has been idle
 * STAGE_THREAD_HEAP_IDLE_MS; it is let go when its heap is still past the bound then (or at once where it
 * cannot collect). A thread let go takes its warm sandboxes (CodeGen scripts, see warm-scripts.ts) with
 * it: it starts none after that job, and the thread the next job takes starts them instead, for the kinds
 * of script the worker ran lately.
 */
import { Inject, Injectable, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import { Counter, Registry } from 'prom-client';
import { METRICS_REGISTRY, Places, sharedMetric } from '@tapyard/core';
import type { TransferListItem, Worker } from 'node:worker_threads';
import type { PipelineDefinition } from '@tapyard/model';
import type { Payload } from '@tapyard/destinations';
import { keepThreadProbes, reclaimThreadLeases } from '@tapyard/sandbox';
import { warmKey, type WarmSpec } from '@tapyard/scripts';
import {
  Counts,
  FromThread,
  HEARTBEAT,
  OVERSIZED,
  PlanMessage,
  STAGE,
  RETIRED,
  STAGE_NAMES,
  StartMessage,
  ToThread,
} from './protocol';
import { spawnStageThread } from './spawn';
import { MAX_SPARES } from './warm-scripts';

/** The thread stopped making progress and was terminated. */
export class StageStalledError extends Error {
  constructor(
    readonly stage: (typeof STAGE_NAMES)[number],
    stallMs: number,
  ) {
    super(
      `the ${stage} stage made no progress for ${formatMs(stallMs)} and was stopped (STAGE_STALL_MS); ` +
        'the input is pathological for it',
    );
  }
}

/** The thread reported a failure of the job (the input, the tap stream, the validation schema). */
export class StageThreadError extends Error {
  constructor(
    readonly failure: Extract<FromThread, { kind: 'error' }>['cause'],
    message: string,
    readonly stage: 'DataQuality' | 'Transformation' = 'DataQuality',
  ) {
    super(message);
  }
}

/**
 * After a job whose heap passed this the thread collects its heap (heap-collect.ts) and is reused only
 * when that brings it back within this. The CSV fast path stays under 20 MB and small jobs far under; a
 * large file on the validating path reaches about 100 MB (the worker's 32 MB semi-spaces), 7 MB after
 * the collection.
 */
export const STAGE_THREAD_MAX_HEAP_BYTES = 40 << 20;

/**
 * How long such a thread stays idle before it collects: jobs coming one after the other keep the grown
 * heap they all use (a collection shrinks the young generation, which the next job grows again: ~0.1 s
 * of CPU per 200,000-row job when every job paid it), an idle worker gives it back within seconds.
 */
export const STAGE_THREAD_HEAP_IDLE_MS = 3000;

interface PooledThread {
  worker: Worker;
  /** The worker's threadId, kept: it reads -1 once the thread has exited. */
  id: number;
  shared: SharedArrayBuffer;
  /** Jobs started on it: the thread tags its replies with this number. */
  jobs: number;
  /** While idle: drops it from the pool when it exits. */
  gone: () => void;
  /** While idle: lets it go when it says its heap stayed past the bound after a collection. */
  oversized: (msg: unknown) => void;
}

function spawn(): PooledThread {
  const worker = spawnStageThread();
  return {
    worker,
    id: worker.threadId,
    shared: new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT),
    jobs: 0,
    gone: () => undefined,
    oversized: () => undefined,
  };
}

@Injectable()
export class StageThreadPool implements OnApplicationBootstrap, OnModuleDestroy {
  private idle: PooledThread[] = [];
  private readonly busy = new Set<PooledThread>();
  /** Threads busy at once: made with the first job's `maxBusy` (the same for every job of a process). */
  private places: Places | null = null;
  /**
   * The kinds of script this worker's jobs ran lately, least recent first: a thread keeps warm sandboxes
   * for its own, and a thread let go (a large job's heap) takes them along, so these go to its successor.
   */
  private readonly kinds = new Map<string, WarmSpec>();
  private closed = false;
  /** Threads started after one probed the sandbox's host take its findings instead of probing again. */
  private readonly stopKeepingProbes = keepThreadProbes();
  /** Threads stopped by the watchdog, by stage, when the process keeps metrics. */
  private readonly stalls: Counter<'stage'> | null;

  constructor(@Optional() @Inject(METRICS_REGISTRY) registry?: Registry) {
    this.stalls = registry
      ? sharedMetric(
          registry,
          'tapyard_stage_stalls_total',
          () =>
            new Counter({
              name: 'tapyard_stage_stalls_total',
              help: 'Stage threads stopped for making no progress within STAGE_STALL_MS, by stage',
              labelNames: ['stage'],
              registers: [registry],
            }),
        )
      : null;
  }

  /**
   * Starts a job's stages on a thread; the session must be ended with `end()`. `maxBusy`: threads
   * busy at once (LARGE_JOB_CONCURRENCY); a job past it waits for one to end, first come first served
   * (a small upload's job with scripts takes a thread too).
   */
  async start(
    job: Omit<StartMessage, 'kind' | 'shared' | 'maxHeapBytes' | 'heapIdleMs'>,
    opts: { stallMs: number; maxIdle: number; maxBusy: number; maxHeapBytes?: number; heapIdleMs?: number },
  ): Promise<StageSession> {
    if (this.closed) throw new Error('the worker is shutting down');
    this.places ??= new Places(opts.maxBusy);
    const leave = await this.places.enter();
    if (leave === null) throw new Error('the worker is shutting down');
    const thread = this.idle.pop() ?? spawn();
    thread.worker.off('exit', thread.gone);
    thread.worker.off('error', thread.gone);
    thread.worker.off('message', thread.oversized);
    this.busy.add(thread);
    const session = new StageSession(
      thread,
      opts.stallMs,
      {
        maxBytes: opts.maxHeapBytes ?? STAGE_THREAD_MAX_HEAP_BYTES,
        idleMs: opts.heapIdleMs ?? STAGE_THREAD_HEAP_IDLE_MS,
      },
      (reusable, scripts) => {
        this.busy.delete(thread);
        this.remember(scripts);
        if (reusable && !this.closed && this.idle.length < opts.maxIdle) this.keep(thread);
        else this.letGo(thread);
        leave();
      },
      (stage) => this.stalls?.inc({ stage }),
    );
    session.begin(job);
    return session;
  }

  onApplicationBootstrap(): void {
    this.ready();
  }

  private remember(scripts: readonly WarmSpec[]): void {
    for (const spec of scripts) {
      const key = warmKey(spec);
      this.kinds.delete(key);
      this.kinds.set(key, spec);
    }
    for (const key of this.kinds.keys()) if (this.kinds.size > MAX_SPARES) this.kinds.delete(key);
  }

  /** The thread the next job takes (the last idle one) starts warm sandboxes for the recent kinds. */
  private handOver(): void {
    const next = this.idle.at(-1);
    if (this.closed || next === undefined || this.kinds.size === 0) return;
    const msg: ToThread = { kind: 'spares', specs: [...this.kinds.values()] };
    next.worker.postMessage(msg);
  }

  /** A thread starts now unless one is idle: the next job takes it without waiting for its start. */
  private ready(): void {
    if (!this.closed && this.idle.length === 0) this.keep(spawn());
  }

  /** Retires a thread; one is started for the next job, and takes over the warm sandboxes' kinds. */
  private letGo(thread: PooledThread): void {
    void retire(thread);
    this.ready();
    this.handOver();
  }

  /**
   * An idle thread; one that exits while idle (it never should) is dropped, not given to a job, and one
   * whose heap stayed past the bound after its collection is let go. (Taken by a job before it says so,
   * it runs that job; the job's end collects again.)
   */
  private keep(thread: PooledThread): void {
    const drop = (): boolean => {
      const idle = this.idle.includes(thread);
      this.idle = this.idle.filter((t) => t !== thread);
      thread.worker.off('exit', thread.gone);
      thread.worker.off('error', thread.gone);
      thread.worker.off('message', thread.oversized);
      return idle;
    };
    thread.gone = () => {
      drop();
      void endThread(thread);
    };
    thread.oversized = (msg) => {
      if (msg === OVERSIZED && drop() && !this.closed) this.letGo(thread);
    };
    thread.worker.once('exit', thread.gone);
    thread.worker.once('error', thread.gone);
    thread.worker.on('message', thread.oversized);
    this.idle.push(thread);
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    // Jobs still waiting for a thread fail as the shutdown's.
    this.places?.close();
    this.stopKeepingProbes();
    const all = [...this.idle, ...this.busy];
    this.idle = [];
    await Promise.all(all.map(retire));
  }
}

/**
 * A stalled thread never answers: it is terminated after this long regardless. Longer than stopping a
 * warm sandbox may take (its processes killed, then its cgroups removed, retried for up to 5 s while
 * the last process is reaped: libs/sandbox/src/cgroups.ts): a thread terminated before that gives its
 * uids back leaves their lease files behind, and a uid whose lease names a live process stays taken for
 * as long as the worker runs (in CI, under load, after the former 2 s).
 */
const RETIRE_WAIT_MS = 10_000;

/** Lets the thread stop its warm sandboxes (see RetireMessage), then terminates it. */
async function retire(thread: PooledThread): Promise<void> {
  let answered: () => void = () => undefined;
  const onMessage = (msg: unknown) => {
    if (msg === RETIRED) answered();
  };
  thread.worker.on('message', onMessage);
  const timer = new Promise<void>((resolve) => {
    const t = setTimeout(resolve, RETIRE_WAIT_MS);
    answered = () => {
      clearTimeout(t);
      resolve();
    };
  });
  try {
    const msg: ToThread = { kind: 'retire' };
    thread.worker.postMessage(msg);
    await timer;
  } finally {
    thread.worker.off('message', onMessage);
    await endThread(thread);
  }
}

/**
 * Terminates a stage thread and takes back the sandbox uids it still held (a thread terminated while
 * a sandbox of its ran, or before it stopped its warm ones, cannot give them back itself: their lease
 * files name this live process, so they stayed taken until it restarted).
 */
async function endThread(thread: PooledThread): Promise<void> {
  await thread.worker.terminate();
  await reclaimThreadLeases(thread.id).catch(() => undefined);
}

type Reply = FromThread;

export class StageSession {
  private readonly beat: Int32Array;
  private waiters: { resolve: (r: Reply) => void; reject: (e: Error) => void }[] = [];
  private failed: Error | null = null;
  private done = false;
  /** Set by end(): the thread may be another job's from then on. */
  private ended = false;
  private planned = false;
  private prefetched: Promise<Reply> | null = null;
  /** Binary COPY pieces' memory to give back to the thread with the next request. */
  private readonly spare: ArrayBuffer[] = [];
  private heapBytes = 0;
  /** The thread will collect the heap the job grew past the bound (see heap-collect.ts): it may be kept. */
  private collects = false;
  /** The job's scripts as a warm sandbox would be started for them (see StageThreadPool.kinds). */
  private scripts: WarmSpec[] = [];
  private jobId = -1;
  private lastBeat = -1;
  private lastMove = Date.now();
  private readonly timer: NodeJS.Timeout;
  private readonly onMessage = (m: { id: number; reply: Reply }) => {
    if (m.id !== this.jobId) return; // a reply to an earlier job of this thread
    this.waiters.shift()?.resolve(m.reply);
  };
  private readonly onError = (err: Error) => this.fail(err);
  private readonly onExit = (code: number) => this.fail(new Error(`the stage thread exited (${code})`));

  constructor(
    private readonly thread: PooledThread,
    private readonly stallMs: number,
    private readonly heap: { maxBytes: number; idleMs: number },
    private readonly release: (reusable: boolean, scripts: readonly WarmSpec[]) => void,
    private readonly onStall: (stage: (typeof STAGE_NAMES)[number]) => void,
  ) {
    this.beat = new Int32Array(thread.shared);
    thread.worker.on('message', this.onMessage);
    thread.worker.on('error', this.onError);
    thread.worker.on('exit', this.onExit);
    this.timer = setInterval(() => this.watch(), Math.max(20, Math.min(1000, stallMs / 4)));
  }

  begin(job: Omit<StartMessage, 'kind' | 'shared' | 'maxHeapBytes' | 'heapIdleMs'>): void {
    this.beat[STAGE] = 0;
    // The thread numbers the jobs it is given; this one is the next.
    this.jobId = ++this.thread.jobs;
    this.firstReply = this.request(
      {
        ...job,
        kind: 'start',
        shared: this.thread.shared,
        maxHeapBytes: this.heap.maxBytes,
        heapIdleMs: this.heap.idleMs,
      },
      [job.input],
    );
    this.firstReply.catch(() => undefined); // seen when first() is awaited
  }

  private firstReply: Promise<Reply> | null = null;

  /** The file's header and width, from its first batch. */
  async first(): Promise<{ header: string[] | null; width: number | null }> {
    const r = expect(await (this.firstReply as Promise<Reply>), 'first');
    return { header: r.header, width: r.width };
  }

  /**
   * Starts the scripts the job will most likely run (see WarmMessage) while the first batch is read
   * and the load planned; a no-op once the job is planned, failed or ended.
   */
  warm(scripts: PlanMessage['scripts']): void {
    if (this.ended || this.planned || this.failed || scripts.length === 0) return;
    const msg: ToThread = { kind: 'warm', scripts };
    this.thread.worker.postMessage(msg);
  }

  async plan(
    definition: PipelineDefinition,
    fileColumns: string[],
    schema: { file: string; text: string } | null,
    encoders: PlanMessage['encoders'],
    scripts: PlanMessage['scripts'],
  ): Promise<void> {
    this.planned = true;
    // Without the script's text and columns: what a warm sandbox needs, kept by the pool a while.
    this.scripts = scripts.map(({ script: _script, outputColumns: _columns, ...spec }) => spec);
    expect(
      await this.request({ kind: 'plan', definition, fileColumns, schema, encoders, scripts }),
      'planned',
    );
  }

  /**
   * The next batch, encoded for each destination (payloads[i] for encoders[i]), or the final
   * counts. One batch is converted ahead.
   */
  async next(): Promise<
    | { payloads: Payload[][]; counts: Counts; spent?: ArrayBuffer[] }
    | { end: Counts; sample: Record<string, unknown>[] }
  > {
    const pending = this.prefetched ?? this.requestNext();
    this.prefetched = null;
    const r = await pending;
    if (r.kind === 'end') {
      this.done = true;
      this.heapBytes = r.heapBytes;
      this.collects = r.collects;
      return { end: r.counts, sample: r.sample };
    }
    const batch = expect(r, 'batch');
    this.prefetched = this.requestNext();
    this.prefetched.catch(() => undefined); // seen when awaited; never unhandled
    return { payloads: batch.payloads, counts: batch.counts, spent: batch.spent };
  }

  /** Memory of a binary COPY piece the loaders have sent: it goes back with the next request. */
  giveBack(b: ArrayBuffer): void {
    if (!this.ended && b.byteLength > 0) this.spare.push(b);
  }

  private requestNext(): Promise<Reply> {
    const spare = this.spare.splice(0);
    return spare.length > 0 ? this.request({ kind: 'next', spare }, spare) : this.request({ kind: 'next' });
  }

  /** Whether the whole input was read (the thread reported its end). */
  get finished(): boolean {
    return this.done;
  }

  /**
   * Ends the session; the thread goes back to the pool only after a clean end, its heap within the bound
   * or being collected back into it.
   */
  end(): void {
    this.ended = true;
    clearInterval(this.timer);
    const w = this.thread.worker;
    w.off('message', this.onMessage);
    w.off('error', this.onError);
    w.off('exit', this.onExit);
    const clean = this.failed === null && this.waiters.length === 0 && this.done;
    this.release(clean && (this.heapBytes <= this.heap.maxBytes || this.collects), this.scripts);
  }

  private request(msg: ToThread, transfer: TransferListItem[] = []): Promise<Reply> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise<Reply>((resolve, reject) => {
      if (this.waiters.length === 0) this.lastMove = Date.now();
      this.waiters.push({ resolve, reject });
      this.thread.worker.postMessage(msg, transfer);
    }).then((r) => {
      if (r.kind === 'error') throw new StageThreadError(r.cause, r.message, r.stage);
      return r;
    });
  }

  private watch(): void {
    const beat = Atomics.load(this.beat, HEARTBEAT);
    if (beat !== this.lastBeat || this.waiters.length === 0) {
      this.lastBeat = beat;
      this.lastMove = Date.now();
      return;
    }
    if (Date.now() - this.lastMove < this.stallMs) return;
    const stage = STAGE_NAMES[Atomics.load(this.beat, STAGE)] ?? 'DataQuality';
    if (!this.failed) this.onStall(stage);
    this.fail(new StageStalledError(stage, this.stallMs));
    void endThread(this.thread);
  }

  private fail(err: Error): void {
    if (this.failed) return;
    this.failed = err;
    clearInterval(this.timer);
    for (const w of this.waiters.splice(0)) w.reject(err);
  }
}

function expect<K extends Reply['kind']>(r: Reply, kind: K): Extract<Reply, { kind: K }> {
  if (r.kind !== kind) throw new Error(`stage thread answered '${r.kind}' where '${kind}' was due`);
  return r as Extract<Reply, { kind: K }>;
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
