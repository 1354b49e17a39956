/**
 * Reads a CodeGen script's answer to one batch. The answer comes from hostile code: the driver
 * appended to the script writes it, but the script runs in the same interpreter and may replace the
 * driver's functions or write its own lines to the record channel. So nothing in it is trusted: every
 * index, length and packed section is checked against the batch it answers before it is used, and
 * whatever does not fit is a ScriptFailure (the job fails naming the script), never a row loaded in
 * the wrong place, a loop that does not end or an allocation the batch does not call for.
 */
import type { FieldType, SchemaField, TypedBatch } from '@tapyard/model';
import { Invalid, coercer, type Value } from '@tapyard/model';
import { type CodegenKind, ENTRY_POINTS } from './script-contract';

/** The longest reason shown for one rejected row or one failed run. */
export const MAX_REASON = 500;

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

/** Rows the script rejected (index into the batch it was given) with the reason. */
export interface ScriptRejects {
  rows: number[];
  reasons: string[];
}

export interface ReadAnswer {
  batch: TypedBatch;
  rejects: ScriptRejects;
}

const MALFORMED = 'the transformation driver answered a malformed batch';

/**
 * The batch a script's answer makes of `batch`: a data-quality script's without the rows it rejects,
 * a transformation's with its columns (the input's, then `outputColumns`), typed, rejecting a row it
 * dropped or whose values do not fit their types.
 */
export function readAnswer(
  kind: CodegenKind,
  outputColumns: readonly SchemaField[],
  batch: TypedBatch,
  answer: unknown,
): ReadAnswer {
  const n = batch.lines.length;
  const columns = kind === 'transformation' ? [...batch.columns, ...outputColumns] : [...batch.columns];
  if (isObject(answer) && Object.hasOwn(answer, 'result')) {
    const result = answer.result;
    if (!Array.isArray(result) || result.length !== n) {
      const got = Array.isArray(result) ? `${result.length} entries` : describe(result);
      throw new ScriptFailure(
        `${ENTRY_POINTS[kind]}() must return a list with one entry per row (${n} rows), got ${got}`,
      );
    }
    return kind === 'dataQuality' ? verdicts(batch, result) : transformed(batch, columns, result);
  }
  if (kind === 'dataQuality' && isObject(answer) && answer.pass === true) {
    return { batch, rejects: { rows: [], reasons: [] } };
  }
  if (kind === 'transformation' && isObject(answer) && Object.hasOwn(answer, 'columns')) {
    return fromColumns(batch, columns, columnar(answer, n, columns.length));
  }
  throw new ScriptFailure('the script driver answered something else than a batch');
}

function transformed(batch: TypedBatch, columns: readonly SchemaField[], answer: unknown[]): ReadAnswer {
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
    if (!isObject(row)) {
      throw new ScriptFailure(
        `transform() must return a dict (or None) per row; row ${i} is ${describe(row)}`,
      );
    }
    const typed: Value[] = [];
    let problem: string | null = null;
    for (let c = 0; c < columns.length && problem === null; c++) {
      const name = columns[c].name;
      // Own keys only: a column named like an Object member ("constructor") is not found on the prototype.
      const raw = Object.hasOwn(row, name) ? row[name] : undefined;
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
  return { batch: { columns: [...columns], values, lines }, rejects };
}

/**
 * A transformation's answer by column (see runnableScript): a null column is the input's, as
 * typed; in the others a value equal to the one given is kept and any other is checked by its
 * column type's rules, the row's first problem (in column order) rejecting it.
 */
function fromColumns(batch: TypedBatch, columns: readonly SchemaField[], answer: ColumnarAnswer): ReadAnswer {
  const { dropped, kept } = answer;
  const inputs = batch.columns.length;
  const problems: (string | null)[] = new Array<string | null>(kept.length).fill(null);
  const values: Value[][] = columns.map((c, k) => {
    const given = k < inputs ? batch.values[k] : null;
    const got = answer.columns[k];
    if (got === null) {
      if (given === null) throw new ScriptFailure(MALFORMED);
      return dropped.length === 0 ? given : kept.map((i) => given[i]);
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
  // Rejects in row order, as the row-wise answer gives them (dropped and kept are both ascending).
  for (let r = 0, d = 0; r < kept.length || d < dropped.length;) {
    if (d < dropped.length && (r === kept.length || dropped[d] < kept[r])) {
      rejects.rows.push(dropped[d]);
      rejects.reasons.push('the transformation rejected this row');
      d++;
      continue;
    }
    const problem = problems[r];
    if (problem !== null) {
      rejects.rows.push(kept[r]);
      rejects.reasons.push(problem);
      rejected.add(r);
    }
    r++;
  }
  const outColumns = [...columns];
  if (rejected.size === 0)
    return { batch: { columns: outColumns, values, lines: kept.map((i) => batch.lines[i]) }, rejects };
  const keep = (_: unknown, r: number): boolean => !rejected.has(r);
  return {
    batch: {
      columns: outColumns,
      values: values.map((col) => col.filter(keep)),
      lines: kept.filter(keep).map((i) => batch.lines[i]),
    },
    rejects,
  };
}

/** A transformation's answer by column, checked against its batch and its packed columns unpacked. */
interface ColumnarAnswer {
  columns: (unknown[] | null)[];
  /** The rows answered None, ascending. */
  dropped: number[];
  /** The other rows, ascending: the rows of each answered column. */
  kept: number[];
}

/**
 * `{"columns", "dropped"}` as the driver writes it, or a ScriptFailure: `dropped` strictly ascending
 * row indexes of this batch, one entry per output column, each null, a list of one value per kept row,
 * or packed doubles of exactly that many rows. Lengths are checked before anything is allocated.
 */
function columnar(answer: Record<string, unknown>, rows: number, width: number): ColumnarAnswer {
  const { columns, dropped } = answer;
  if (!Array.isArray(columns) || !Array.isArray(dropped) || columns.length !== width || dropped.length > rows)
    throw new ScriptFailure(MALFORMED);
  for (let d = 0; d < dropped.length; d++) {
    const i: unknown = dropped[d];
    if (!isRow(i, rows) || (d > 0 && i <= (dropped[d - 1] as number))) throw new ScriptFailure(MALFORMED);
  }
  const kept: number[] = [];
  for (let i = 0, d = 0; i < rows; i++) {
    if (d < dropped.length && dropped[d] === i) d++;
    else kept.push(i);
  }
  return {
    columns: columns.map((c: unknown) => {
      if (c === null) return null;
      if (Array.isArray(c)) {
        if (c.length !== kept.length) throw new ScriptFailure(MALFORMED);
        return c as unknown[];
      }
      return unpacked(c, kept.length);
    }),
    dropped: dropped as number[],
    kept,
  };
}

/** A column of doubles as the driver packs it: base64 of their bytes, and the rows that are None. */
function unpacked(packed: unknown, rows: number): (number | null)[] {
  if (!isObject(packed) || typeof packed.f8 !== 'string' || !Array.isArray(packed.nulls))
    throw new ScriptFailure(MALFORMED);
  const { f8, nulls } = packed as { f8: string; nulls: unknown[] };
  // Base64 of 8 × rows bytes, padded: its length is known before decoding anything.
  if (f8.length !== Math.ceil((8 * rows) / 3) * 4 || nulls.length > rows) throw new ScriptFailure(MALFORMED);
  const bytes = Buffer.from(f8, 'base64');
  if (bytes.length !== 8 * rows) throw new ScriptFailure(MALFORMED);
  // A copy: the decoded bytes need not sit at a multiple of 8 in their pool.
  const values: (number | null)[] = Array.from(new Float64Array(new Uint8Array(bytes).buffer));
  for (const i of nulls) {
    if (!isRow(i, rows)) throw new ScriptFailure(MALFORMED);
    values[i] = null;
  }
  return values;
}

function isRow(i: unknown, rows: number): i is number {
  return typeof i === 'number' && Number.isInteger(i) && i >= 0 && i < rows;
}

function verdicts(batch: TypedBatch, answer: unknown[]): ReadAnswer {
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

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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
