import { ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { Readable, Writable } from 'node:stream';
import { classifyEnd, harnessError, memoryLimitError } from './classify';
import { SandboxError, SandboxErrorDetails, SandboxErrorKind } from './errors';
import { formatBytes, formatDuration, LOG_HARD_CAP_FACTOR, RunLimits } from './limits';
import { LogCollector } from './log-collector';
import { maskSecrets } from './masking';
import { RecordParser, RecordStreamError } from './record-parser';

export type IsolationMode = 'bwrap' | 'none';

/** A started child: its stdio is [stdin or ignore, stdout, stderr, records(, extra)]. */
export interface Launch {
  child: ChildProcess;
  isolation: IsolationMode;
  /**
   * Gives back what the run held beyond its process (its uid and cgroups), once the child has
   * exited with `signal`; the outcome settles after it. Must not reject.
   */
  release?: (signal: NodeJS.Signals | null) => Promise<Released>;
}

export interface Released {
  /** The kernel killed a process of the run for going over the run's memory (its cgroup). */
  memoryExceeded: boolean;
}

export interface RunOutcome {
  /** As reported by the direct child (bwrap reports a signal as 128 + n). */
  exitCode: number | null;
  /** The signal that ended the script, if any, also when bwrap relayed it as an exit code. */
  signal: NodeJS.Signals | null;
  /** stdout and stderr in arrival order, secrets masked, cut to maxLogBytes with a note. */
  logs: string;
  logsTruncated: boolean;
  error: SandboxError | null;
  durationMs: number;
  /** Records received from the harness (all of them, even if the consumer stopped early). */
  recordCount: number;
  outputBytes: number;
  isolation: IsolationMode | null;
  /** The state fetch(state) left, when the run asked for one (RunRequest.state) and succeeded. */
  state?: Record<string, unknown>;
}

export type RecordsCallback = (batch: unknown[]) => void | Promise<void>;

/** Records from one read of the channel. */
export interface RecordChunk {
  /** Parsed records; empty when the consumer asked for text only. */
  records: unknown[];
  /** Their JSON text as the harness wrote it: one record per line, joined by "\n". */
  text: string;
  count: number;
  /** Rows mode: record keys seen for the first time in this chunk, in order of appearance. */
  keys: string[];
}

/** After the script exits, how long its descendants may keep stdout/stderr open. */
const LOG_DRAIN_GRACE_MS = 1000;

/**
 * One run. Records are pulled, never pushed: while nobody reads them the child blocks on its
 * pipe, so a slow consumer slows the script instead of filling memory. `outcome` settles once
 * the child has exited and the records have been read to the end (or the run failed); it never
 * rejects. Consume the records exactly once (iterate the handle, records(), batches(), or pass
 * onRecords to run()); records nobody claims end the run with a timeout error.
 */
export class RunHandle implements AsyncIterable<unknown> {
  readonly outcome: Promise<RunOutcome>;
  /** Settles (never rejects) once the child was spawned or the launch failed; input() waits for it. */
  readonly started: Promise<void>;
  private resolveOutcome: (outcome: RunOutcome) => void = () => undefined;
  private readonly parser: RecordParser;
  private readonly logs: LogCollector;
  private child: ChildProcess | null = null;
  private release: Launch['release'];
  private releasing = false;
  private memoryExceeded = false;
  private recordStream: Readable | null = null;
  private isolation: IsolationMode | null = null;
  private error: SandboxError | null = null;
  private exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private recordsDone = false;
  private openLogStreams = 0;
  private claimed = false;
  private settled = false;
  private outputBytes = 0;
  private startedAt = performance.now();
  private endedAt: number | null = null;
  private deadline: NodeJS.Timeout | null = null;
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly limits: RunLimits,
    private readonly secrets: readonly string[],
    launch: Promise<Launch>,
    onRecords?: RecordsCallback,
  ) {
    this.outcome = new Promise((resolve) => (this.resolveOutcome = resolve));
    this.parser = new RecordParser(limits.maxRecordBytes);
    this.logs = new LogCollector(limits.maxLogBytes, secrets);
    this.started = launch.then(
      (l) => this.attach(l),
      (err: unknown) => this.launchFailed(err),
    );
    if (onRecords) void this.pump(onRecords);
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    return this.records();
  }

  async *records(): AsyncGenerator<unknown, void, undefined> {
    for await (const batch of this.batches()) yield* batch;
  }

  /** Records in the batches they arrived in: the cheapest way to consume many records. */
  async *batches(): AsyncGenerator<unknown[], void, undefined> {
    for await (const chunk of this.chunks()) yield chunk.records;
  }

  /**
   * Batches with their JSON text as the harness wrote it (one record per line, joined by "\n"),
   * for consumers that store records: they can write the text instead of serialising again.
   */
  async *chunks(options: { parse?: boolean } = {}): AsyncGenerator<RecordChunk, void, undefined> {
    this.parser.parse = options.parse ?? true;
    if (this.claimed) throw new Error('the records of a run can only be consumed once');
    this.claimed = true;
    await this.started;
    if (this.exit) this.clearDeadline();
    const stream = this.recordStream;
    if (!stream || this.recordsDone) return;
    let reachedEnd = false;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        const records = this.take(chunk);
        const p = this.parser;
        if (p.lastCount > 0 || p.lastKeys.length > 0)
          yield { records, text: p.lastText, count: p.lastCount, keys: p.lastKeys };
        if (this.parser.control || this.error) break;
      }
      reachedEnd = true;
    } catch (err) {
      // fail() destroys the stream under the reader; anything else broke the channel.
      reachedEnd = true;
      if (!this.error) this.fail('crashed', `the record channel failed: ${(err as Error).message}`);
    } finally {
      // The consumer left before the end: nobody would read the rest, so stop the script.
      if (!reachedEnd && !this.parser.control) this.fail('killed', 'the run was stopped by the caller');
      this.finishRecords();
    }
  }

  /**
   * Whether the harness said the script's fetch() returned (its "done" line arrived): the channel
   * carries no record after it, whatever the process still does.
   */
  get fetchEnded(): boolean {
    return this.parser.control?.type === 'done';
  }

  /**
   * The script's stdin (RunRequest.stdin) once `started` has settled; null when stdin was not
   * requested, before the launch, or once the child is gone. Write errors (EPIPE when the script
   * died) are swallowed on the stream: the outcome says what happened to the script.
   */
  input(): Writable | null {
    const stdin = this.child?.stdin;
    return stdin && !this.exit && !stdin.destroyed ? stdin : null;
  }

  /**
   * For a run started ahead of its work (BatchSession.prestart): the wall-clock limit and the
   * duration count from now, not from the spawn, so the time it waited costs its work nothing.
   */
  restartClock(): void {
    this.startedAt = performance.now();
    if (this.deadline === null || this.exit || this.settled) return;
    clearTimeout(this.deadline);
    this.deadline = setTimeout(() => this.onDeadline(), this.limits.timeoutMs);
  }

  /**
   * Stops the run (the whole process tree). The outcome reports `reason` (its message is used as
   * is, so it must not carry secrets), by default kind "killed".
   */
  kill(reason?: SandboxError): void {
    if (reason) this.stop(reason);
    else this.fail('killed', 'the run was stopped by the caller');
  }

  private take(chunk: Buffer): unknown[] {
    this.outputBytes += chunk.length;
    if (this.outputBytes > this.limits.maxOutputBytes) {
      const cap = formatBytes(this.limits.maxOutputBytes);
      this.fail('output_limit', `the script produced more than ${cap} of records and was stopped`, {
        limit: this.limits.maxOutputBytes,
      });
      return [];
    }
    try {
      return this.parser.push(chunk);
    } catch (err) {
      if (err instanceof RecordStreamError && err.reason === 'too_large') {
        const cap = formatBytes(this.limits.maxRecordBytes);
        this.fail(
          'output_limit',
          `record ${this.parser.count} is larger than ${cap} and the run was stopped`,
          {
            limit: this.limits.maxRecordBytes,
            record: this.parser.count,
          },
        );
      } else {
        this.fail('crashed', `the script corrupted its record channel (${(err as Error).message})`);
      }
      return [];
    }
  }

  private async pump(onRecords: RecordsCallback): Promise<void> {
    for await (const batch of this.batches()) {
      try {
        await onRecords(batch);
      } catch (err) {
        this.fail('killed', `the record consumer failed: ${(err as Error).message}`);
        break;
      }
    }
  }

  private attach({ child, isolation, release }: Launch): void {
    this.child = child;
    this.isolation = isolation;
    this.release = release;
    this.startedAt = performance.now();
    const [stdin, stdout, stderr, records] = child.stdio;
    this.recordStream = records as Readable;
    // Without a listener an EPIPE from a dead script would be an uncaught error in the platform.
    stdin?.on('error', () => undefined);
    for (const stream of [stdout, stderr]) {
      if (!stream) continue;
      this.openLogStreams += 1;
      stream.on('data', (chunk: Buffer) => this.onLog(chunk));
      stream.once('close', () => {
        this.openLogStreams -= 1;
        this.maybeSettle();
      });
    }
    child.once('exit', (code, signal) => this.onExit(code, signal));
    child.once('error', (err) => {
      // Without a pid the process never started and no 'exit' will follow.
      if (child.pid) return;
      const hint =
        (err as NodeJS.ErrnoException).code === 'EACCES'
          ? ': the sandbox user cannot reach it (an interpreter under /root needs bwrap)'
          : '';
      this.fail('spawn_failed', `the sandbox could not start the interpreter (${err.message})${hint}`);
      this.onExit(null, null);
    });
    this.deadline = setTimeout(() => this.onDeadline(), this.limits.timeoutMs);
    if (this.error) {
      // kill() came before the launch finished.
      this.killTree();
      this.recordStream.destroy();
    }
  }

  private onDeadline(): void {
    const limit = formatDuration(this.limits.timeoutMs);
    const details = { limit: this.limits.timeoutMs };
    if (!this.exit) this.fail('timeout', `the script ran longer than ${limit} and was stopped`, details);
    // Only reached when the script finished but nobody ever asked for its records.
    else this.fail('timeout', `the script's records were not consumed within ${limit}`, details);
  }

  private launchFailed(err: unknown): void {
    if (err instanceof SandboxError) this.error ??= err;
    else this.fail('spawn_failed', `the sandbox could not start: ${(err as Error).message}`);
    this.recordsDone = true;
    this.onExit(null, null);
  }

  private onLog(chunk: Buffer): void {
    this.logs.push(chunk);
    const cap = this.limits.maxLogBytes * LOG_HARD_CAP_FACTOR;
    if (this.logs.totalBytes > cap) {
      this.fail('output_limit', `the script printed more than ${formatBytes(cap)} of logs and was stopped`, {
        limit: cap,
      });
    }
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exit) return;
    this.exit = { code, signal };
    this.endedAt = performance.now();
    // The wall clock stops with the script, unless its records were never claimed: then the
    // deadline is what keeps `outcome` from waiting forever.
    if (this.claimed) this.clearDeadline();
    // Without bwrap's pid namespace, leftovers of the script's process group die here.
    if (this.isolation === 'none') this.signalGroup();
    if (this.release) {
      this.releasing = true;
      void this.release(signal).then((released) => {
        this.memoryExceeded = released.memoryExceeded;
        this.releasing = false;
        this.maybeSettle();
      });
    }
    const [, stdout, stderr] = this.child?.stdio ?? [];
    this.timers.push(
      setTimeout(() => {
        stdout?.destroy();
        stderr?.destroy();
      }, LOG_DRAIN_GRACE_MS),
    );
    this.maybeSettle();
  }

  private fail(kind: SandboxErrorKind, message: string, details: SandboxErrorDetails = {}): void {
    if (this.error || this.settled) return;
    this.stop(new SandboxError(kind, maskSecrets(message, this.secrets), details));
  }

  private stop(error: SandboxError): void {
    if (this.error || this.settled) return;
    this.error = error;
    this.killTree();
    this.finishRecords();
  }

  private finishRecords(): void {
    this.recordsDone = true;
    this.recordStream?.destroy();
    this.maybeSettle();
  }

  /**
   * The child is the leader of its own process group (spawned detached). With bwrap that is
   * bwrap itself: --die-with-parent then kills the sandbox's pid 1 and the namespace with it.
   */
  private killTree(): void {
    if (!this.child || this.exit) return;
    if (!this.signalGroup()) this.child.kill('SIGKILL');
  }

  private signalGroup(): boolean {
    const pid = this.child?.pid;
    if (!pid) return false;
    try {
      process.kill(-pid, 'SIGKILL');
      return true;
    } catch {
      return false;
    }
  }

  private clearDeadline(): void {
    if (this.deadline) clearTimeout(this.deadline);
    this.deadline = null;
  }

  private clearTimers(): void {
    this.clearDeadline();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
  }

  private maybeSettle(): void {
    if (this.settled || !this.exit || !this.recordsDone || this.openLogStreams > 0 || this.releasing) return;
    this.settled = true;
    this.clearTimers();
    const { logs, truncated } = this.logs.finish();
    const end = classifyEnd(this.exit, this.isolation);
    const error =
      this.error ??
      (this.parser.control?.type === 'error'
        ? harnessError(this.parser.control, this.limits, this.secrets)
        : this.parser.control?.type === 'done'
          ? null
          : this.memoryExceeded && end.signal === 'SIGKILL'
            ? memoryLimitError(this.limits)
            : end.error(this.limits, this.logs.head(300), this.secrets));
    this.resolveOutcome({
      exitCode: this.exit.code,
      signal: end.signal,
      logs,
      logsTruncated: truncated,
      error,
      durationMs: Math.round((this.endedAt ?? performance.now()) - this.startedAt),
      recordCount: this.parser.count,
      outputBytes: this.outputBytes,
      isolation: this.isolation,
      ...(error === null && this.parser.control?.type === 'done' && this.parser.control.state
        ? { state: this.parser.control.state }
        : {}),
    });
  }
}
