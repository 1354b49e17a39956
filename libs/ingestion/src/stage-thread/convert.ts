/**
 * What the stage thread does to each batch: the validation schema check, DataQuality (types and
 * rules) and Transformation through the RowPlan, giving a typed batch for the destinations'
 * encoders and one JSON line per rejected row.
 */
import { safeText } from '@tapyard/model';
import { RecordBatch } from '@tapyard/readers';
import type { TypedBatch } from '@tapyard/model';
import { BatchBuilder, RowPlan } from '../row-plan';
import type { Counts } from './protocol';

/** The validation-schema reason of each record (null: valid), given their JSON texts. */
export type RecordValidator = (recordJsons: string[]) => Promise<(string | null)[]>;

/**
 * The pipeline's validation schema as a batch check: a JSON Schema (`.json`) for JSON and XML
 * records, an XSD (`.xsd`) for XML records. Loaded on demand: most pipelines have neither.
 * Throws when the schema is unusable.
 */
export async function recordValidator(
  schema: { file: string; text: string },
  rowElement: string,
): Promise<RecordValidator> {
  const prefix = `record does not match validation schema '${schema.file}'`;
  if (schema.file.endsWith('.xsd')) {
    const { XsdRecordValidator } = await import('../../../schemas/src/xsd-validator');
    const xsd = XsdRecordValidator.create(schema.text, rowElement);
    return async (records) => {
      const parsed = records.map(parseRecord);
      const objects = parsed.filter((r): r is Record<string, unknown> => typeof r !== 'string');
      const reasons = await xsd.check(objects);
      let k = 0;
      return parsed.map((r) => (typeof r === 'string' ? r : reasons[k++] && `${prefix}: ${reasons[k - 1]}`));
    };
  }
  const { compileJsonSchema } = await import('../../../configfiles/src/json-schema-compile');
  const check = compileJsonSchema(schema.text, schema.file);
  return async (records) =>
    records.map((json) => {
      const record = parseRecord(json);
      if (typeof record === 'string') return record;
      if (check(record)) return null;
      const e = check.errors?.[0];
      return `${prefix}: ${e ? `${e.instancePath || '/'} ${e.message ?? 'is invalid'}` : 'invalid'}`;
    });
}

/** A record's object, or why it is not one. */
function parseRecord(json: string): Record<string, unknown> | string {
  try {
    const v = JSON.parse(json) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : 'record is not a JSON object';
  } catch {
    return 'record is not valid JSON';
  }
}

export function newCounts(): Counts {
  return { rows: 0, rejected: 0, dq: 0, tf: 0, firstReject: null, unparsed: 0, binary: 0 };
}

/** Where rejected rows go, one JSON line each: the job's rejects file, or a batch's own lines. */
export interface RejectSink {
  write(line: string): unknown;
}

/**
 * One batch: its accepted rows, typed; rejected rows go to `rejects`. `spin` (tests only) is called
 * with each row before DataQuality.
 */
export function convert(
  batch: RecordBatch,
  plan: RowPlan,
  counts: Counts,
  rejects: RejectSink,
  reasons: (string | null)[] | null,
  spin: ((row: (string | null)[]) => void) | null,
  out: BatchBuilder,
): TypedBatch {
  for (const e of batch.errors) {
    counts.firstReject ??= `line ${e.line}: ${e.reason}`;
    counts.rejected++;
    counts.dq++;
    rejects.write(
      JSON.stringify({
        line: e.line,
        stage: 'DataQuality',
        reason: safeText(e.reason),
        raw: safeText(e.raw),
      }) + '\n',
    );
  }
  for (let i = 0; i < batch.rows.length; i++) {
    counts.rows++;
    if (spin !== null) spin(batch.rows[i]);
    const invalid = reasons ? reasons[i] : null;
    const r =
      invalid === null
        ? plan.process(batch.rows[i], batch.lines[i], out)
        : { stage: 'DataQuality' as const, reason: invalid };
    if (r !== null) {
      counts.firstReject ??= `line ${batch.lines[i]}: ${r.reason}`;
      counts.rejected++;
      if (r.stage === 'DataQuality') counts.dq++;
      else counts.tf++;
      const raw = plan.rawText(batch.rows[i]);
      rejects.write(
        JSON.stringify({
          line: batch.lines[i],
          stage: r.stage,
          reason: safeText(r.reason),
          raw: safeText(raw.length > 1000 ? raw.slice(0, 1000) : raw),
        }) + '\n',
      );
    }
  }
  counts.rows += batch.errors.length;
  return out.take();
}
