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
  number: number;
  timeoutMs: number;
  data: string | Uint8Array;
  /** Running from the call's turn (its answer is the next record) to its answer. */
  timer: NodeJS.Timeout | null;
  written: boolean;
}

export interface SessionOptions {
  /**
   * Write each call's input at once, not at its turn: the script reads the next input while the
   * caller still handles the answer before it. Only for a script that reads exactly one input per
   * answer it yields (a length-framed reader, as the CodeGen driver): answers stay matched to calls
   * in order, and each call's clock still starts at its turn.
   */
  pipelined?: boolean;
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
  /** The calls not answered yet, in order: the first one's answer is the next record. */
  private readonly queue: PendingCall[] = [];
  private failure: SandboxError | null = null;
  /** Settles when the last call made has. */
  private tail: Promise<unknown> = Promise.resolve();
  /** The inputs go to stdin one after the other, each once the pipe took the one before. */
  private writing: Promise<void> = Promise.resolve();
  private calls = 0;
  private began = false;
  private answered = 0;
  private closing: Promise<RunOutcome> | null = null;

  private constructor(
    private readonly handle: RunHandle,
    private readonly options: SessionOptions,
  ) {
    void this.read();
  }

  /** Starts the run (request gets stdin: true, flushEach: true, rows: false forced). */
  static start(sandbox: PythonSandbox, request: RunRequest, options: SessionOptions = {}): BatchSession {
    // onRecords would claim the records the session answers calls with.
    const run = sandbox.run({ ...request, stdin: true, flushEach: true, rows: false, onRecords: undefined });
    return new BatchSession(run, options);
  }

  /**
   * Starts a sandbox ahead of its script (RunRequest.scriptFromStdin): bwrap, the cgroups, the
   * interpreter and the harness start now and wait; begin() hands the script over, once. Nothing
   * of a script ever ran in it before, so taking it is as isolated as a fresh start.
   */
  static prestart(sandbox: PythonSandbox, request: RunRequest, options: SessionOptions = {}): BatchSession {
    return BatchSession.start(sandbox, { ...request, scriptFromStdin: true }, options);
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
   * script's start-up). Calls are serialized: a second call's input is written once the first is
   * answered, unless the session is `pipelined` (then at once; its answer still comes second).
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
    if (this.failure) return Promise.reject(this.failure);
    const number = this.calls;
    const data = typeof input === 'string' ? `${input}\n` : input;
    const answer = new Promise<unknown>((resolve, reject) => {
      const call: PendingCall = { resolve, reject, number, timeoutMs, data, timer: null, written: false };
      this.queue.push(call);
      if (this.queue.length === 1) this.turn(call);
      else if (this.options.pipelined === true) this.write(call);
    });
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

  /** The call's answer is the next record: its clock starts, and its input goes out if not yet. */
  private turn(call: PendingCall): void {
    call.timer = setTimeout(() => {
      const limit = formatDuration(call.timeoutMs);
      const message = `the script did not answer call ${call.number} within ${limit} and was stopped`;
      this.abort(new SandboxError('timeout', message, { limit: call.timeoutMs }));
    }, call.timeoutMs);
    this.write(call);
  }

  private write(call: PendingCall): void {
    if (call.written) return;
    call.written = true;
    // A write that fails leaves the call to its answer, the run's end or its timeout, and the next ones to go.
    this.writing = this.writing.then(() => this.send(call)).catch(() => undefined);
  }

  /** Problems writing are not reported here: the call settles by its answer, the run's end or its timeout. */
  private async send(call: PendingCall): Promise<void> {
    await this.handle.started;
    const input = this.handle.input();
    if (!input) return;
    // A previous input may still sit in the stream's buffer (a script answering before reading all
    // of it, or one written ahead): wait for the pipe instead of piling inputs up in memory.
    await drained(input);
    if (!this.queue.includes(call) || input.destroyed) return;
    input.write(call.data);
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
    const call = this.queue.shift();
    if (!call) {
      if (this.failure) return; // the run is being stopped; records still in the pipe mean nothing
      const message =
        `the script yielded a record no call asked for (after ${this.answered} answers); ` +
        'it must yield exactly one record per input line';
      this.abort(new SandboxError('crashed', message));
      return;
    }
    if (call.timer) clearTimeout(call.timer);
    this.answered += 1;
    call.resolve(record);
    const next = this.queue[0];
    if (next) this.turn(next);
  }

  private abort(error: SandboxError): void {
    this.failure ??= error;
    this.settle(error);
    this.handle.kill(error);
  }

  private settle(error: SandboxError): void {
    for (const call of this.queue.splice(0)) {
      if (call.timer) clearTimeout(call.timer);
      call.reject(error);
    }
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
