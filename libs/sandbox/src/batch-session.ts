import { Writable } from 'node:stream';
import { SandboxError } from './errors';
import { formatDuration } from './limits';
import { RunHandle, RunOutcome } from './run-handle';
import { PythonSandbox, RunRequest } from './sandbox';

/** setTimeout fires at once for larger delays, which would turn a long timeout into none. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

interface PendingCall {
  resolve(record: unknown): void;
  reject(error: SandboxError): void;
  timer: NodeJS.Timeout;
}

/**
 * One sandboxed process answering many calls: each call writes one line (a JSON text) to the
 * script's stdin and resolves with the next record its fetch() yields, so the script's fetch()
 * is a generator reading sys.stdin line by line and yielding one record per line.
 *
 * The request's limits bound the whole session, not one call: timeoutMs is the session's wall
 * clock, cpuSeconds its CPU time, maxOutputBytes all answers together, maxRecordBytes each answer.
 * Once a call fails (the script raised, died, timed out or broke the protocol) the session is
 * over and every later call rejects with the same error.
 */
export class BatchSession {
  private pending: PendingCall | null = null;
  private failure: SandboxError | null = null;
  /** Calls run one after the other: this settles when the last queued one has. */
  private tail: Promise<unknown> = Promise.resolve();
  private calls = 0;
  private began = false;
  private answered = 0;
  private closing: Promise<RunOutcome> | null = null;

  private constructor(private readonly handle: RunHandle) {
    void this.read();
  }

  /** Starts the run (request gets stdin: true, flushEach: true, rows: false forced). */
  static start(sandbox: PythonSandbox, request: RunRequest): BatchSession {
    // onRecords would claim the records the session answers calls with.
    const run = sandbox.run({ ...request, stdin: true, flushEach: true, rows: false, onRecords: undefined });
    return new BatchSession(run);
  }

  /**
   * Starts a sandbox ahead of its script (RunRequest.scriptFromStdin): bwrap, the cgroups, the
   * interpreter and the harness start now and wait; begin() hands the script over, once. Nothing
   * of a script ever ran in it before, so taking it is as isolated as a fresh start.
   */
  static prestart(sandbox: PythonSandbox, request: RunRequest): BatchSession {
    return BatchSession.start(sandbox, { ...request, scriptFromStdin: true });
  }

  /**
   * Sends a prestarted run its script and restarts its wall clock. False when the run is over (it
   * died or was killed while it waited): start a fresh one instead. Before any call.
   */
  async begin(script: string): Promise<boolean> {
    if (this.began || this.calls > 0) throw new Error('begin() comes once, before any call');
    this.began = true;
    if (this.failure || this.closing) return false;
    await this.handle.started;
    const input = this.handle.input();
    if (!input || this.failure) return false;
    const text = Buffer.from(script, 'utf8');
    const head = Buffer.alloc(4);
    head.writeUInt32LE(text.length);
    this.handle.restartClock();
    input.write(Buffer.concat([head, text]));
    return true;
  }

  /**
   * Writes `input` to the script's stdin and resolves with the next record the script yields: a
   * string is one line (a JSON text, no newline inside; the session appends "\n"), bytes are
   * written as they are (the caller frames them, and the script reads them from sys.stdin.buffer).
   * Rejects with the run's SandboxError (script traceback in its details, secrets masked) when the
   * script fails or exits before answering, and with kind "timeout", killing the run, when no
   * answer comes within timeoutMs (counted from the call's turn, so the first call includes the
   * script's start-up). Calls are serialized: a second call waits for the first.
   */
  call(input: string | Uint8Array, timeoutMs: number): Promise<unknown> {
    if (this.closing) return Promise.reject(new Error('the batch session is closed'));
    if (typeof input === 'string' && input.includes('\n')) {
      return Promise.reject(new TypeError('a batch session call takes one line: it must not contain "\\n"'));
    }
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) {
      return Promise.reject(
        new RangeError(`timeoutMs must be an integer from 1 to ${MAX_TIMEOUT_MS} (got ${timeoutMs})`),
      );
    }
    this.calls += 1;
    const number = this.calls;
    const data = typeof input === 'string' ? `${input}\n` : input;
    const answer = this.tail.then(() => this.exchange(data, timeoutMs, number));
    this.tail = answer.catch(() => undefined);
    return answer;
  }

  /** Ends stdin, waits for the run to finish, returns its outcome (logs etc.). Idempotent. */
  close(): Promise<RunOutcome> {
    this.closing ??= this.finish();
    return this.closing;
  }

  /** Kills the run at once. */
  kill(): void {
    this.abort(new SandboxError('killed', 'the run was stopped by the caller'));
  }

  private async finish(): Promise<RunOutcome> {
    // Calls made before close() still get their answers; the script sees the end of its input after them.
    await this.tail;
    await this.handle.started;
    this.handle.input()?.end();
    return this.handle.outcome;
  }

  private exchange(data: string | Uint8Array, timeoutMs: number, number: number): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const call: PendingCall = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const limit = formatDuration(timeoutMs);
          const message = `the script did not answer call ${number} within ${limit} and was stopped`;
          this.abort(new SandboxError('timeout', message, { limit: timeoutMs }));
        }, timeoutMs),
      };
      this.pending = call;
      void this.send(data, call);
    });
  }

  /** Problems writing are not reported here: the call settles by its answer, the run's end or its timeout. */
  private async send(data: string | Uint8Array, call: PendingCall): Promise<void> {
    await this.handle.started;
    const input = this.handle.input();
    if (!input) return;
    // A previous line may still sit in the stream's buffer (a script answering before reading all
    // of it): wait for the pipe instead of piling lines up in memory.
    await drained(input);
    if (this.pending !== call || input.destroyed) return;
    input.write(data);
  }

  /**
   * Reads the record channel for the whole session, not only while a call waits: a record
   * arriving when no call is waiting breaks the one-answer-per-line protocol, and seeing it
   * early stops answers from being matched to the wrong calls.
   */
  private async read(): Promise<void> {
    try {
      for await (const batch of this.handle.batches()) {
        for (const record of batch) this.deliver(record);
      }
    } catch {
      // batches() only throws on misuse (a second consumer); the outcome says how the run ended.
    }
    const answers = `${this.answered} call${this.answered === 1 ? '' : 's'}`;
    const ended = `the script's fetch() ended after answering ${answers}; it answers no more`;
    // After the "done" line nothing more is read: the calls fail now, not when the process exits
    // (a script may write that line itself and block, which would leave them to their timeout).
    if (this.handle.fetchEnded) {
      this.failure ??= new SandboxError('crashed', ended);
      this.settle(this.failure);
    }
    const outcome = await this.handle.outcome;
    if (!this.failure) {
      const exit = outcome.exitCode === null ? {} : { exitCode: outcome.exitCode };
      this.failure = outcome.error ?? new SandboxError('crashed', ended, exit);
    }
    this.settle(this.failure);
  }

  private deliver(record: unknown): void {
    const call = this.pending;
    if (!call) {
      if (this.failure) return; // the run is being stopped; records still in the pipe mean nothing
      const message =
        `the script yielded a record no call asked for (after ${this.answered} answers); ` +
        'it must yield exactly one record per input line';
      this.abort(new SandboxError('crashed', message));
      return;
    }
    this.pending = null;
    clearTimeout(call.timer);
    this.answered += 1;
    call.resolve(record);
  }

  private abort(error: SandboxError): void {
    this.failure ??= error;
    this.settle(error);
    this.handle.kill(error);
  }

  private settle(error: SandboxError): void {
    const call = this.pending;
    if (!call) return;
    this.pending = null;
    clearTimeout(call.timer);
    call.reject(error);
  }
}

function drained(stream: Writable): Promise<void> {
  if (!stream.writableNeedDrain) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}
