// The stage thread loads this file: deep imports keep its module graph small (no Nest modules,
// DTOs or database drivers), which is what a thread per job costs to start.
import type { CsvAttributes, PipelineDefinition, SchemaField, TypedBatch } from '@tapyard/model';
import {
  Expr,
  evaluate,
  parseExpression,
  outputFields,
  Coerced,
  Invalid,
  Value,
  coercer,
  MAX_RULES_PER_COLUMN,
  columnsOverRuleLimit,
} from '@tapyard/model';
import { Check, compileRule } from './data-quality-rules';

/** Why a row was not loaded. */
export interface Rejection {
  stage: 'DataQuality' | 'Transformation';
  reason: string;
}

/** Collects accepted rows by column, for one TypedBatch at a time. */
export class BatchBuilder {
  private values: Value[][];
  private lines: number[] = [];

  constructor(private readonly columns: SchemaField[]) {
    this.values = columns.map(() => []);
  }

  get rows(): number {
    return this.lines.length;
  }

  /** Appends a row whose values are in `row` (one per column). */
  push(row: Value[], line: number): void {
    for (let c = 0; c < row.length; c++) this.values[c].push(row[c]);
    this.lines.push(line);
  }

  take(): TypedBatch {
    const batch = { columns: this.columns, values: this.values, lines: this.lines };
    this.values = this.columns.map(() => []);
    this.lines = [];
    return batch;
  }
}

/**
 * Everything needed to turn a file row into typed values, compiled once per job: where each schema
 * column sits in the file, its coercer, its data-quality checks, and the transformation steps.
 */
export class RowPlan {
  readonly outColumns: SchemaField[];
  private readonly fields: SchemaField[];
  private readonly sourceIndex: number[];
  private readonly inCoercers: ((raw: string) => Coerced)[];
  /** The row in progress (reused: the common case allocates nothing per row). */
  private readonly scratch: Value[];
  private readonly checks: Check[][];
  private readonly steps: CompiledStep[];
  private readonly outCoercers: ((raw: string) => Coerced)[];
  /** schemaContract `discard_rows`: the file columns the schema does not have, by position. */
  private readonly stray: { index: number; name: string }[];
  /** A row's cells as the text a rejected row keeps (`raw`). */
  readonly rawText: (row: (string | null)[]) => string;

  /**
   * `stage`: where the row in progress is, for a watchdog in another thread: 0 DataQuality,
   * 1 Transformation.
   */
  constructor(
    def: PipelineDefinition,
    fileColumns: string[],
    private readonly stage: Int32Array | null = null,
  ) {
    this.fields = def.source.schemaProperties.fields;
    this.sourceIndex = this.fields.map((f) => fileColumns.indexOf(f.name));
    // A pipeline's own nullValues replace the built-in null tokens of non-string columns.
    const nullTokens = def.source.fileAttributes.csvAttributes?.nullValues === undefined;
    this.inCoercers = this.fields.map((f) => coercer(f.type, nullTokens, f));
    // Saving a pipeline refuses more; one stored before the limit fails here rather than running them.
    const [crowded] = columnsOverRuleLimit(def.dataQuality.rules);
    if (crowded !== undefined) {
      throw new Error(
        `column '${crowded.column}' has ${crowded.rules} data-quality rules, more than the ` +
          `${MAX_RULES_PER_COLUMN} a column may have: edit the pipeline`,
      );
    }
    this.checks = this.fields.map((f) =>
      def.dataQuality.rules.filter((r) => r.column === f.name).map((r) => compileRule(r, f.type)),
    );
    this.steps = def.transformation.mappings.map(compileStep);
    this.outColumns = outputFields(this.fields, def.transformation.mappings);
    this.outCoercers = this.outColumns.map((c) => coercer(c.type, true, c));
    this.scratch = new Array<Value>(this.fields.length).fill(null);
    const known = new Set(this.fields.map((f) => f.name));
    this.stray =
      def.schemaContract === 'discard_rows'
        ? fileColumns.flatMap((name, index) => (known.has(name) ? [] : [{ index, name }]))
        : [];
    const fa = def.source.fileAttributes;
    this.rawText = fa.format === 'csv' ? csvLine(fa.csvAttributes) : (row) => row.join(',');
  }

  get transforms(): boolean {
    return this.steps.length > 0;
  }

  /**
   * `row`: the file's cells; null is NULL (an unquoted null marker, a missing value). An accepted
   * row is appended to `out` (whose columns are outColumns); a refused one returns why.
   */
  process(row: (string | null)[], line: number, out: BatchBuilder): Rejection | null {
    for (const s of this.stray) {
      const cell = row[s.index];
      if (cell !== null && cell !== undefined && cell !== '') {
        return {
          stage: 'DataQuality',
          reason: `column '${s.name}' is not in the pipeline schema (schema contract 'discard_rows')`,
        };
      }
    }
    const n = this.fields.length;
    const values = this.scratch;
    for (let i = 0; i < n; i++) {
      const idx = this.sourceIndex[i];
      const raw = idx >= 0 && idx < row.length ? row[idx] : null;
      const v = raw === null ? null : this.inCoercers[i](raw);
      if (v instanceof Invalid)
        return { stage: 'DataQuality', reason: `column '${this.fields[i].name}': ${v.reason}` };
      const checks = this.checks[i];
      if (checks.length > 0) {
        const value = raw === null || v === null ? null : raw.trim();
        for (const check of checks) {
          const problem = check(value);
          if (problem) return { stage: 'DataQuality', reason: `column '${this.fields[i].name}': ${problem}` };
        }
      }
      values[i] = v;
    }
    if (this.steps.length === 0) {
      out.push(values, line);
      return null;
    }
    if (this.stage !== null) this.stage[0] = 1;
    const rejection = this.transform(row, line, out);
    if (this.stage !== null) this.stage[0] = 0;
    return rejection;
  }

  /** Transformation works on plain values by name; the output is coerced to the output types. */
  private transform(row: (string | null)[], line: number, out: BatchBuilder): Rejection | null {
    const values = new Map<string, string | null>();
    this.fields.forEach((f, i) => {
      const idx = this.sourceIndex[i];
      const raw = idx >= 0 && idx < row.length ? row[idx] : null;
      values.set(f.name, raw === null ? null : f.type === 'string' ? raw : raw.trim());
    });
    for (const step of this.steps) step(values);
    const result = new Array<Value>(this.outColumns.length);
    for (let i = 0; i < this.outColumns.length; i++) {
      const v = values.get(this.outColumns[i].name) ?? null;
      const c = v === null ? null : this.outCoercers[i](v);
      if (c instanceof Invalid)
        return {
          stage: 'Transformation',
          reason: `column '${this.outColumns[i].name}': ${c.reason}`,
        };
      result[i] = c;
    }
    out.push(result, line);
    return null;
  }
}

/**
 * A row as one CSV line in the pipeline's own dialect, reading back to the same cells: a cell is
 * quoted when it holds the delimiter, the quote, the escape or a line break, is empty (`""`: the
 * empty string, where an unquoted empty field is NULL) or is one of the null markers; NULL is the
 * empty unquoted field. Files written by the usual tools quote exactly so.
 */
export function csvLine(attrs: CsvAttributes): (row: (string | null)[]) => string {
  const delimiter = attrs.delimiter ?? ',';
  const quote = attrs.quote ?? null;
  if (quote === null) return (row) => row.map((c) => c ?? '').join(delimiter);
  const escape = attrs.escape ?? quote;
  const nulls = new Set(attrs.nullValues ?? ['']);
  const special = new RegExp(`[${[delimiter, quote, escape, '\\r', '\\n'].map(escapeClass).join('')}]`);
  const escaped = new RegExp(`[${[...new Set([quote, escape])].map(escapeClass).join('')}]`, 'g');
  const cell = (c: string | null): string => {
    if (c === null) return '';
    if (c !== '' && !nulls.has(c) && !special.test(c)) return c;
    return quote + c.replace(escaped, (m) => escape + m) + quote;
  };
  return (row) => row.map(cell).join(delimiter);
}

/** A character as it stands in a regular-expression class. */
function escapeClass(ch: string): string {
  return ch.length === 1 ? ch.replace(/[\\\]^-]/g, '\\$&') : ch;
}

type CompiledStep = (values: Map<string, string | null>) => void;

function compileStep(step: PipelineDefinition['transformation']['mappings'][number]): CompiledStep {
  switch (step.op) {
    case 'rename':
      return (v) => {
        v.set(step.to, v.get(step.from) ?? null);
        v.delete(step.from);
      };
    case 'drop':
      return (v) => void v.delete(step.column);
    case 'cast':
      // The value is kept; the output coercion to the new type decides whether it fits.
      return () => undefined;
    case 'derive': {
      const expr: Expr = parseExpression(step.expression);
      return (v) =>
        void v.set(
          step.column,
          evaluate(expr, (c) => v.get(c) ?? null),
        );
    }
  }
}
