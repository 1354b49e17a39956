/**
 * Runs one CodeGen script over a job's batches: one sandboxed process per job and script, fed one
 * batch per call (BatchSession), its answers checked against the script contract. Plain code (no Nest):
 * the stage thread runs scripts with it, and the dry run before a script goes live does too.
 */
import {
  BatchSession,
  SandboxError,
  PythonSandbox,
  type BwrapMode,
  writeScript,
  type ScriptFile,
} from '@tapyard/sandbox';
import type { RunLimits, UidRange } from '@tapyard/sandbox';
import type { SchemaField, TypedBatch } from '@tapyard/model';
import { batchFrame } from './batch-frame';
import { MAX_REASON, ScriptFailure, readAnswer, type ReadAnswer } from './script-answer';
import { CodegenKind, ENTRY_POINTS, KIND_STAGES, SCRIPT_FILES, runnableScript } from './script-contract';

export { ScriptFailure, type ScriptRejects } from './script-answer';

/** Everything a process needs to start a script: structured-clone data, so it crosses into a thread. */
export interface ScriptRunSpec {
  kind: CodegenKind;
  script: string;
  /** Transformation scripts: the columns they add (OUTPUT_COLUMNS, checked when stored). */
  outputColumns: SchemaField[];
  python: string;
  venvDir: string;
  bwrap: BwrapMode;
  /** TAP_SANDBOX_UIDS: a root platform's per-run uids. */
  uids?: UidRange;
  limits: Partial<RunLimits>;
  batchTimeoutMs: number;
}

/**
 * What may be shown of a failed run to someone who may not read the rows it ran on (a pending
 * script's reason, incident evidence): the exception's type and where in the script it was raised,
 * never its message; at most MAX_REASON characters.
 */
export function failureWithoutValues(err: unknown): string {
  const text =
    err instanceof ScriptFailure ? err.withoutValues : err instanceof Error ? err.message : String(err);
  return text.length <= MAX_REASON ? text : `${text.slice(0, MAX_REASON - 1)}…`;
}

export class RunningScript {
  /** The failure that ended the run: an answer that could not be read. */
  private broken: Error | null = null;

  private constructor(
    private readonly spec: ScriptRunSpec,
    private readonly session: BatchSession,
    /** null for a script handed to a warm sandbox (WarmScript): it has no file. */
    private readonly file: ScriptFile | null,
    private readonly scriptLines: number,
  ) {}

  static async start(spec: ScriptRunSpec): Promise<RunningScript> {
    const { text, scriptLines } = runnableScript(spec.kind, spec.script);
    // The file name shows in tracebacks: the script's own name (as a module name).
    const file = await writeScript(text, { fileName: SCRIPT_FILES[spec.kind].replace('-', '_') });
    const session = BatchSession.start(
      sandboxOf(spec),
      { scriptPath: file.path, python: spec.python, venvDir: spec.venvDir, env: {} },
      // The driver reads one length-framed batch per answer: the next batch can wait in the pipe.
      { pipelined: true },
    );
    return new RunningScript(spec, session, file, scriptLines);
  }

  /** A script WarmScript.take() handed to its sandbox. */
  static handedOver(spec: ScriptRunSpec, session: BatchSession, scriptLines: number): RunningScript {
    return new RunningScript(spec, session, null, scriptLines);
  }

  get stage(): 'DataQuality' | 'Transformation' {
    return KIND_STAGES[this.spec.kind];
  }

  /** `data-quality` or `transformation`, for messages. */
  get name(): string {
    return SCRIPT_FILES[this.spec.kind].replace(/\.py$/, '');
  }

  /** Columns of the batches apply() returns. */
  outColumns(input: readonly SchemaField[]): SchemaField[] {
    return this.spec.kind === 'transformation' ? [...input, ...this.spec.outputColumns] : [...input];
  }

  /**
   * One batch through the script: a data-quality script returns the batch without the rows it rejects;
   * a transformation returns the transformed rows (input columns, then the added ones), typed, and
   * rejects a row it drops or whose values do not fit their types.
   */
  async apply(batch: TypedBatch): Promise<ReadAnswer> {
    if (batch.lines.length === 0)
      return {
        batch: { ...batch, columns: this.outColumns(batch.columns) },
        rejects: { rows: [], reasons: [] },
      };
    if (this.broken) throw this.broken;
    const outputs = this.spec.kind === 'transformation' ? this.spec.outputColumns.map((c) => c.name) : [];
    let answer: unknown;
    try {
      answer = await this.session.call(batchFrame(batch, outputs), this.spec.batchTimeoutMs);
    } catch (err) {
      throw this.failure(err);
    }
    try {
      return readAnswer(this.spec.kind, this.spec.outputColumns, batch, answer);
    } catch (err) {
      // Whatever the script wrote after an answer that did not fit would be taken as the next
      // batch's answer: the run ends with its first unreadable answer.
      this.broken = err instanceof Error ? err : new Error(String(err));
      this.session.kill();
      throw this.broken;
    }
  }

  /** The script's error as one message: its exception and its own frames, never a platform path. */
  private failure(err: unknown): Error {
    if (!(err instanceof SandboxError)) return err instanceof Error ? err : new Error(String(err));
    const entry = ENTRY_POINTS[this.spec.kind];
    const message = err.message.replace(/^fetch\(\) raised /, `${entry}() raised `);
    const frames = (err.details.traceback ?? '').split('\n').reduce<{ out: string[]; keep: boolean }>(
      (acc, line) => {
        const m = /^ {2}File "[^"]*", line (\d+), in /.exec(line);
        if (m) acc.keep = Number(m[1]) <= this.scriptLines;
        if (acc.keep && line.trim() !== '') acc.out.push(line);
        return acc;
      },
      { out: [], keep: false },
    ).out;
    const full = frames.length > 0 ? `${message}\n${frames.join('\n')}` : message;
    if (err.kind !== 'fetch_raised') return new ScriptFailure(full);
    // The places alone: a frame's source line is the script's, but the message may quote a row.
    const places = frames.filter((line) => line.startsWith('  File '));
    const raised = `${entry}() raised ${err.details.exception ?? 'an exception'}`;
    return new ScriptFailure(full, [raised, ...places].join('\n'));
  }

  /** Ends the script after its last batch; one that does not leave within a batch's time is killed. */
  async close(): Promise<void> {
    const timer = setTimeout(() => this.session.kill(), this.spec.batchTimeoutMs);
    try {
      await this.session.close();
    } finally {
      clearTimeout(timer);
      await this.file?.remove().catch(() => undefined);
    }
  }

  kill(): void {
    this.session.kill();
    void this.file?.remove().catch(() => undefined);
  }
}

/** What a warm sandbox is started with: everything of a run but the script. */
export type WarmSpec = Omit<ScriptRunSpec, 'script' | 'outputColumns'>;

/** Specs with the same key can take each other's warm sandbox. */
export function warmKey(spec: WarmSpec): string {
  const { kind, python, venvDir, bwrap, uids, limits, batchTimeoutMs } = spec;
  return JSON.stringify([kind, python, venvDir, bwrap, uids ?? null, limits, batchTimeoutMs]);
}

/**
 * A sandbox started ahead of its script (the stage thread keeps one per kind of script it ran, started
 * after each job): bwrap, the run's cgroups and uid, the interpreter, the harness and site are ready,
 * and the harness waits for the script on stdin. take() gives it one job's script; it is never taken
 * twice, so no job or tenant sees what another's script left in memory or in its /tmp.
 */
export class WarmScript {
  private taken = false;

  private constructor(
    readonly key: string,
    private readonly session: BatchSession,
  ) {}

  static start(spec: WarmSpec): WarmScript {
    const session = BatchSession.prestart(
      sandboxOf(spec),
      {
        // Only the name counts: the one tracebacks show, as for a script file.
        scriptPath: `/${SCRIPT_FILES[spec.kind].replace('-', '_')}`,
        python: spec.python,
        venvDir: spec.venvDir,
        env: {},
      },
      { pipelined: true },
    );
    return new WarmScript(warmKey(spec), session);
  }

  /** The script running in this sandbox; null when the sandbox is gone (then start one as usual). */
  async take(spec: ScriptRunSpec): Promise<RunningScript | null> {
    if (this.taken || warmKey(spec) !== this.key) return null;
    this.taken = true;
    const { text, scriptLines } = runnableScript(spec.kind, spec.script);
    if (!(await this.session.begin(text))) {
      this.session.kill();
      return null;
    }
    return RunningScript.handedOver(spec, this.session, scriptLines);
  }

  kill(): void {
    this.session.kill();
  }

  /** Kills it and settles once its uid and cgroups are given back. */
  async stop(): Promise<void> {
    this.session.kill();
    await this.session.close();
  }
}

function sandboxOf(spec: WarmSpec): PythonSandbox {
  return new PythonSandbox({ bwrap: spec.bwrap, uids: spec.uids, limits: spec.limits });
}
