/**
 * Reader for the records of a tap run: the spool holds one JSON object per line, exactly as the
 * harness wrote them (json.dumps never writes a raw newline inside a record). For CSV pipelines each
 * object becomes a row of cells in `keys` order, so the rest of the job treats it like a CSV file
 * whose header is `columns` (the normalised names of `keys`).
 */
import { StringDecoder } from 'node:string_decoder';
import { ByteInput, rechunk } from './chunks';
import { DEFAULT_BATCH_BYTES, DEFAULT_BATCH_ROWS, rawText } from './batch-sink';
import { RecordBatch } from './record-batch';

/** A value as a CSV cell carries it: null and absent are NULL, objects are JSON text. */
function cell(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Batches of at most `batchRows` records, or fewer once their lines hold `batchBytes` (as BatchSink). */
export async function* readTapRecords(
  input: ByteInput,
  mapping: { keys: string[]; columns: string[] },
  batchRows = DEFAULT_BATCH_ROWS,
  batchBytes = DEFAULT_BATCH_BYTES,
): AsyncGenerator<RecordBatch> {
  const { keys, columns } = mapping;
  let batch: RecordBatch = { rows: [], lines: [], errors: [], header: columns };
  let bytes = 0;
  let line = 0;
  let rest = '';
  const row = (o: Record<string, unknown>): void => {
    const cells = new Array<string | null>(keys.length);
    for (let i = 0; i < keys.length; i++) cells[i] = cell(o[keys[i]]);
    batch.rows.push(cells);
    batch.lines.push(line);
  };
  const one = (text: string): void => {
    line++;
    if (text.length === 0) return;
    bytes += text.length;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      batch.errors.push({ line, reason: 'record is not valid JSON', raw: rawText(text) });
      return;
    }
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      row(value as Record<string, unknown>);
    } else batch.errors.push({ line, reason: 'record is not a JSON object', raw: rawText(text) });
  };
  // A chunk may end inside a multi-byte character: the decoder holds it back for the next one.
  const decoder = new StringDecoder('utf8');
  for await (const chunk of rechunk(input)) {
    const text = rest + decoder.write(chunk);
    const last = text.lastIndexOf('\n');
    if (last < 0) {
      rest = text;
      continue;
    }
    // One JSON.parse per line: V8 parses many small texts faster than one joined array.
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0 && nl <= last; nl = text.indexOf('\n', start)) {
      one(text.slice(start, nl));
      start = nl + 1;
      if (batch.rows.length + batch.errors.length >= batchRows || bytes >= batchBytes) {
        yield batch;
        batch = { rows: [], lines: [], errors: [] };
        bytes = 0;
      }
    }
    rest = text.slice(last + 1);
  }
  rest += decoder.end();
  if (rest.length > 0) one(rest);
  yield batch;
}
