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
import type { FieldType, SchemaField, TypedBatch } from '@tapyard/model';
import { Invalid, coercer, type Value } from '@tapyard/model';
import { batchFrame } from './batch-frame';
import { CodegenKind, ENTRY_POINTS, KIND_STAGES, SCRIPT_FILES, runnableScript } from './script-contract';

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

/** The longest reason shown for one rejected row or one failed run. */
const MAX_REASON = 500;

/**
 * A script failed: its own error, with only its own frames (the driver's are cut). `withoutValues` says
 * the same without the exception's message, which the script may have built from row values.
 */
export class ScriptFailure extends Error {
  override readonly name = 'ScriptFailure';

  constructor(
    message: string,
    readonly withoutValues: string = message,
  ) {
    super(message);
  }
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

/** Rows the script rejected (index into the batch it was given) with the reason. */
export interface ScriptRejects {
  rows: number[];
  reasons: string[];
}

export class RunningScript {
  private constructor(
    private readonly spec: ScriptRunSpec,
    private readonly session: BatchSession,
    private readonly file: ScriptFile,
    private readonly scriptLines: number,
  ) {}

  static async start(spec: ScriptRunSpec): Promise<RunningScript> {
    const { text, scriptLines } = runnableScript(spec.kind, spec.script);
    // The file name shows in tracebacks: the script's own name (as a module name).
    const file = await writeScript(text, { fileName: SCRIPT_FILES[spec.kind].replace('-', '_') });
    const sandbox = new PythonSandbox({ bwrap: spec.bwrap, uids: spec.uids, limits: spec.limits });
    const session = BatchSession.start(sandbox, {
      scriptPath: file.path,
      python: spec.python,
      venvDir: spec.venvDir,
      env: {},
    });
    return new RunningScript(spec, session, file, scriptLines);
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
  async apply(batch: TypedBatch): Promise<{ batch: TypedBatch; rejects: ScriptRejects }> {
    const n = batch.lines.length;
    if (n === 0)
      return {
        batch: { ...batch, columns: this.outColumns(batch.columns) },
        rejects: { rows: [], reasons: [] },
      };
    const outputs = this.spec.kind === 'transformation' ? this.spec.outputColumns.map((c) => c.name) : [];
    const got = await this.call(batchFrame(batch, outputs));
    if ('pass' in got) return { batch, rejects: { rows: [], reasons: [] } };
    if ('columnar' in got) return this.fromColumns(batch, got.columnar);
    const answer = got.result;
    const entry = ENTRY_POINTS[this.spec.kind];
    if (!Array.isArray(answer) || answer.length !== n) {
      const got = Array.isArray(answer) ? `${answer.length} entries` : describe(answer);
      throw new ScriptFailure(`${entry}() must return a list with one entry per row (${n} rows), got ${got}`);
    }
    return this.spec.kind === 'dataQuality' ? verdicts(batch, answer) : this.transformed(batch, answer);
  }

  /**
   * The script's answer: a data-quality script's "every row passes", a transformation's by column,
   * or what the entry point returned.
   */
  private async call(
    frame: Buffer,
  ): Promise<{ pass: true } | { columnar: ColumnarAnswer } | { result: unknown }> {
    let answer: unknown;
    try {
      answer = await this.session.call(frame, this.spec.batchTimeoutMs);
    } catch (err) {
      throw this.failure(err);
    }
    if (typeof answer === 'object' && answer !== null && 'result' in answer)
      return { result: (answer as { result: unknown }).result };
    if (this.spec.kind === 'dataQuality' && isPass(answer)) return { pass: true };
    if (this.spec.kind === 'transformation' && isColumnar(answer)) return { columnar: unpacked(answer) };
    throw new ScriptFailure('the script driver answered something else than a batch');
  }

  private transformed(batch: TypedBatch, answer: unknown[]): { batch: TypedBatch; rejects: ScriptRejects } {
    const columns = this.outColumns(batch.columns);
    const inputs = batch.columns.length;
    const coerce = columns.map((c) => coercer(c.type, false, c));
    const values: Value[][] = columns.map(() => []);
    const lines: number[] = [];
    const rejects: ScriptRejects = { rows: [], reasons: [] };
    for (let i = 0; i < answer.length; i++) {
      const row = answer[i];
      if (row === null) {
        rejects.rows.push(i);
        rejects.reasons.push('the transformation rejected this row');
        continue;
      }
      if (typeof row !== 'object' || Array.isArray(row)) {
        throw new ScriptFailure(
          `transform() must return a dict (or None) per row; row ${i} is ${describe(row)}`,
        );
      }
      const obj = row as Record<string, unknown>;
      const typed: Value[] = [];
      let problem: string | null = null;
      for (let c = 0; c < columns.length && problem === null; c++) {
        const name = columns[c].name;
        const raw = obj[name];
        if (raw === undefined) problem = `transform() left out column '${name}'`;
        else if (c < inputs && raw === batch.values[c][i]) typed.push(raw as Value);
        else {
          // A value the script changed (or added) is checked by its column type's own rules.
          const v = toValue(raw, coerce[c]);
          if (v instanceof Invalid) problem = `column '${name}' after the transformation: ${v.reason}`;
          else typed.push(v);
        }
      }
      if (problem !== null) {
        rejects.rows.push(i);
        rejects.reasons.push(problem);
        continue;
      }
      for (let c = 0; c < columns.length; c++) values[c].push(typed[c]);
      lines.push(batch.lines[i]);
    }
    return { batch: { columns, values, lines }, rejects };
  }

  /**
   * A transformation's answer by column (see runnableScript): a null column is the input's, as
   * typed; in the others a value equal to the one given is kept and any other is checked by its
   * column type's rules, the row's first problem (in column order) rejecting it.
   */
  private fromColumns(
    batch: TypedBatch,
    answer: ColumnarAnswer,
  ): { batch: TypedBatch; rejects: ScriptRejects } {
    const columns = this.outColumns(batch.columns);
    const n = batch.lines.length;
    const dropped = new Set(answer.dropped);
    const kept: number[] = [];
    for (let i = 0; i < n; i++) if (!dropped.has(i)) kept.push(i);
    if (
      answer.columns.length !== columns.length ||
      answer.columns.some((c) => c !== null && c.length !== kept.length)
    )
      throw new ScriptFailure('the transformation driver answered a malformed batch');
    const inputs = batch.columns.length;
    const problems: (string | null)[] = new Array<string | null>(kept.length).fill(null);
    const values: Value[][] = columns.map((c, k) => {
      const given = k < inputs ? batch.values[k] : null;
      const got = answer.columns[k];
      if (got === null) {
        if (given === null) throw new ScriptFailure('the transformation driver answered a malformed batch');
        return dropped.size === 0 ? given : kept.map((i) => given[i]);
      }
      const coerce = coercer(c.type, false, c);
      const exact = exactNumber(c.type);
      const out: Value[] = new Array<Value>(kept.length);
      for (let r = 0; r < kept.length; r++) {
        const raw = got[r];
        if (given !== null && raw === given[kept[r]]) {
          out[r] = raw as Value;
          continue;
        }
        if (typeof raw === 'number' && exact(raw)) {
          // What the text of the number would coerce to, without the text (-0 reads as 0).
          out[r] = raw + 0;
          continue;
        }
        const v = toValue(raw, coerce);
        if (v instanceof Invalid) {
          problems[r] ??= `column '${c.name}' after the transformation: ${v.reason}`;
          out[r] = null;
        } else out[r] = v;
      }
      return out;
    });
    const rejects: ScriptRejects = { rows: [], reasons: [] };
    const rejected = new Set<number>();
    for (let r = 0, d = 0; r < kept.length || d < answer.dropped.length;) {
      // Rejects in row order, as the row-wise answer gives them.
      const nextDropped = d < answer.dropped.length ? answer.dropped[d] : Infinity;
      const nextKept = r < kept.length ? kept[r] : Infinity;
      if (nextDropped < nextKept) {
        rejects.rows.push(nextDropped);
        rejects.reasons.push('the transformation rejected this row');
        d++;
        continue;
      }
      const problem = problems[r];
      if (problem !== null) {
        rejects.rows.push(nextKept);
        rejects.reasons.push(problem);
        rejected.add(r);
      }
      r++;
    }
    if (rejected.size === 0)
      return { batch: { columns, values, lines: kept.map((i) => batch.lines[i]) }, rejects };
    const keep = (_: unknown, r: number): boolean => !rejected.has(r);
    return {
      batch: {
        columns,
        values: values.map((col) => col.filter(keep)),
        lines: kept.filter(keep).map((i) => batch.lines[i]),
      },
      rejects,
    };
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
      await this.file.remove().catch(() => undefined);
    }
  }

  kill(): void {
    this.session.kill();
    void this.file.remove().catch(() => undefined);
  }
}

function verdicts(batch: TypedBatch, answer: unknown[]): { batch: TypedBatch; rejects: ScriptRejects } {
  const rejects: ScriptRejects = { rows: [], reasons: [] };
  const keep: number[] = [];
  for (let i = 0; i < answer.length; i++) {
    const v = answer[i];
    if (v === null || v === true || v === '') keep.push(i);
    else if (typeof v === 'string' || v === false) {
      rejects.rows.push(i);
      rejects.reasons.push(
        typeof v === 'string' ? v.slice(0, MAX_REASON) : 'rejected by the data-quality script',
      );
    } else
      throw new ScriptFailure(
        `check() must return None or a reason (str) per row; row ${i} got ${describe(v)}`,
      );
  }
  if (rejects.rows.length === 0) return { batch, rejects };
  return {
    batch: {
      columns: batch.columns,
      values: batch.values.map((col) => keep.map((i) => col[i])),
      lines: keep.map((i) => batch.lines[i]),
    },
    rejects,
  };
}

/** A value from the script's JSON, checked against its column's type by the schema's own rules. */
function toValue(v: unknown, coerce: (raw: string) => Value | Invalid): Value | Invalid {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
    if (typeof v === 'number' && !Number.isFinite(v)) return new Invalid('is not a finite number');
    return coerce(String(v));
  }
  return new Invalid(`is ${describe(v)}, not a value`);
}

function describe(v: unknown): string {
  if (v === null) return 'None';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'a dict' : `a ${typeof v}`;
}

/** Numbers a column type takes as they are: its coercer would read their text back unchanged. */
function exactNumber(type: FieldType): (v: number) => boolean {
  switch (type) {
    case 'double':
      return Number.isFinite;
    case 'int':
      return (v) => Number.isInteger(v) && v >= -2147483648 && v <= 2147483647;
    case 'bigint':
      return Number.isSafeInteger;
    default:
      return () => false;
  }
}

/** A transformation's answer by column (see runnableScript), its packed columns unpacked. */
interface ColumnarAnswer {
  columns: (unknown[] | null)[];
  dropped: number[];
}

/** A column of doubles as the driver packs it: base64 of their bytes, and the rows that are None. */
interface PackedDoubles {
  f8: string;
  nulls: number[];
}

function isPass(answer: unknown): boolean {
  return typeof answer === 'object' && answer !== null && (answer as { pass?: unknown }).pass === true;
}

function isColumnar(answer: unknown): answer is { columns: unknown[]; dropped: number[] } {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return false;
  const a = answer as Partial<ColumnarAnswer>;
  return Array.isArray(a.columns) && Array.isArray(a.dropped);
}

function unpacked(answer: { columns: unknown[]; dropped: number[] }): ColumnarAnswer {
  const columns = answer.columns.map((c) => {
    if (c === null || Array.isArray(c)) return c;
    const p = c as Partial<PackedDoubles>;
    if (typeof p.f8 !== 'string' || !Array.isArray(p.nulls))
      throw new ScriptFailure('the transformation driver answered a malformed batch');
    const bytes = Buffer.from(p.f8, 'base64');
    if (bytes.length % 8 !== 0)
      throw new ScriptFailure('the transformation driver answered a malformed batch');
    // A copy: the decoded bytes need not sit at a multiple of 8 in their pool.
    const values: (number | null)[] = Array.from(new Float64Array(new Uint8Array(bytes).buffer));
    for (const i of p.nulls) {
      if (!Number.isInteger(i) || i < 0 || i >= values.length)
        throw new ScriptFailure('the transformation driver answered a malformed batch');
      values[i] = null;
    }
    return values;
  });
  return { columns, dropped: answer.dropped };
}
