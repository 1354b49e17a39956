// The stage thread loads this file: deep imports keep its module graph small (no Nest modules,
// DTOs or database drivers), which is what a thread per job costs to start.
import type {
  DataQualityRule,
  FieldType,
  PipelineDefinition,
  SchemaField,
} from '../../pipelines/src/pipeline.types';
import { Expr, evaluate, parseExpression } from '../../pipelines/src/expression';
import { outputFields } from '../../pipelines/src/output-fields';
import { Coerced, NULL_VALUE, coercer } from '../../destinations/src/copy-text';
import { compileLinearRegex } from '../../core/src/text/linear-regex';

/** Why a row was not loaded. */
export interface Rejection {
  stage: 'DataQuality' | 'Transformation';
  reason: string;
}

/** Outcome of one row: its COPY-text line (a plain string: the common case allocates nothing more), or a rejection. */
export type RowOutcome = string | Rejection;

type Check = (value: string | null) => string | null;

/**
 * Everything needed to turn a file row into a COPY line, compiled once per job: where each schema
 * column sits in the file, its coercer, its data-quality checks, and the transformation steps.
 */
export class RowPlan {
  readonly outColumns: SchemaField[];
  private readonly fields: SchemaField[];
  private readonly sourceIndex: number[];
  private readonly inCoercers: ((raw: string) => Coerced)[];
  private readonly checks: Check[][];
  private readonly steps: CompiledStep[];
  private readonly outCoercers: ((raw: string) => Coerced)[];

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
    this.inCoercers = this.fields.map((f) => coercer(f.type, nullTokens));
    this.checks = this.fields.map((f) =>
      def.dataQuality.rules.filter((r) => r.column === f.name).map((r) => compileRule(r, f.type)),
    );
    this.steps = def.transformation.mappings.map(compileStep);
    this.outColumns = outputFields(this.fields, def.transformation.mappings);
    this.outCoercers = this.outColumns.map((c) => coercer(c.type));
  }

  get transforms(): boolean {
    return this.steps.length > 0;
  }

  /** `row`: the file's cells; null is NULL (an unquoted null marker, a missing value). */
  process(row: (string | null)[]): RowOutcome {
    const n = this.fields.length;
    // Built by concatenation: no per-row array, and V8 ropes make this cheap (hot path).
    let line = '';
    for (let i = 0; i < n; i++) {
      const idx = this.sourceIndex[i];
      const raw = idx >= 0 && idx < row.length ? row[idx] : null;
      const c = raw === null ? NULL_VALUE : this.inCoercers[i](raw);
      if (!c.ok) return { stage: 'DataQuality', reason: `column '${this.fields[i].name}': ${c.reason}` };
      const checks = this.checks[i];
      if (checks.length > 0) {
        const value = raw === null || c.text === '\\N' ? null : raw.trim();
        for (const check of checks) {
          const problem = check(value);
          if (problem) return { stage: 'DataQuality', reason: `column '${this.fields[i].name}': ${problem}` };
        }
      }
      line = i === 0 ? c.text : line + '\t' + c.text;
    }
    if (this.steps.length === 0) return line + '\n';
    if (this.stage !== null) this.stage[0] = 1;
    const out = this.transform(row);
    if (this.stage !== null) this.stage[0] = 0;
    return out;
  }

  /** Transformation works on plain values by name; the output is coerced to the output types. */
  private transform(row: (string | null)[]): RowOutcome {
    const values = new Map<string, string | null>();
    this.fields.forEach((f, i) => {
      const idx = this.sourceIndex[i];
      const raw = idx >= 0 && idx < row.length ? row[idx] : null;
      values.set(f.name, raw === null ? null : f.type === 'string' ? raw : raw.trim());
    });
    for (const step of this.steps) step(values);
    const out = new Array<string>(this.outColumns.length);
    for (let i = 0; i < this.outColumns.length; i++) {
      const v = values.get(this.outColumns[i].name) ?? null;
      const c = v === null ? NULL_VALUE : this.outCoercers[i](v);
      if (!c.ok)
        return {
          stage: 'Transformation',
          reason: `column '${this.outColumns[i].name}': ${c.reason}`,
        };
      out[i] = c.text;
    }
    return out.join('\t') + '\n';
  }
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

function compileRule(rule: DataQualityRule, type: FieldType): Check {
  switch (rule.type) {
    case 'not_null':
      return (v) => (v === null ? 'is null (rule not_null)' : null);
    case 'unique': {
      const seen = new Set<string>();
      return (v) => {
        if (v === null) return null;
        if (seen.has(v)) return `value '${short(v)}' is a duplicate (rule unique)`;
        seen.add(v);
        return null;
      };
    }
    case 'range': {
      const numeric = type !== 'date' && type !== 'timestamp';
      const key = (x: number | string): number => (numeric ? Number(x) : Date.parse(String(x)));
      const min = rule.min === undefined ? null : key(rule.min);
      const max = rule.max === undefined ? null : key(rule.max);
      return (v) => {
        if (v === null) return null;
        const k = key(v);
        if (min !== null && k < min) return `value '${short(v)}' is below ${rule.min} (rule range)`;
        if (max !== null && k > max) return `value '${short(v)}' is above ${rule.max} (rule range)`;
        return null;
      };
    }
    case 'regex': {
      // Compiled once per job; linear time whatever the pattern and the value (RE2 semantics).
      const re = compileLinearRegex(rule.pattern);
      return (v) =>
        v === null || re.test(v) ? null : `value '${short(v)}' does not match /${rule.pattern}/ (rule regex)`;
    }
    case 'allowed_values': {
      const allowed = new Set(rule.values);
      return (v) =>
        v === null || allowed.has(v)
          ? null
          : `value '${short(v)}' is not one of the allowed values (rule allowed_values)`;
    }
    case 'type_conformance':
      // Coercion to the schema type already enforces it for every column.
      return () => null;
  }
}

function short(v: string): string {
  return v.length > 100 ? `${v.slice(0, 100)}…` : v;
}
