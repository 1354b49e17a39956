// Loaded in the stage thread: type-only imports.
import type { SchemaField, TypedBatch } from '@tapyard/model';
import type { JsonRowsPayload } from '../destination';
import { jsonValue, namePrefixes } from './json-value';
import { packRows } from './pack-rows';

export { packRows, sliceRows } from './pack-rows';

export { CSV_PIECE_ROWS, createCsvEncoder } from './csv-json';

/**
 * Writes rows of batches with these columns as JSON object texts, names in column order: the name
 * prefixes are built once, and no object is made per row.
 */
export function rowJsonWriter(columns: SchemaField[]): (batch: TypedBatch, row: number) => string {
  if (columns.length === 0) return () => '{}';
  const names = namePrefixes(columns);
  return (batch, row) => {
    let text = '';
    for (let c = 0; c < names.length; c++) text += names[c] + jsonValue(batch.values[c][row]);
    return `${text}}`;
  };
}

/**
 * For sinks sending one JSON object per row (Kafka, REST): the rows are written here, in the stage
 * thread, so the thread that talks to the receiver only frames and sends them.
 */
export function createEncoder(columns: SchemaField[]): (batch: TypedBatch) => JsonRowsPayload {
  const write = rowJsonWriter(columns);
  return (batch) => {
    const rows = new Array<string>(batch.lines.length);
    for (let r = 0; r < rows.length; r++) rows[r] = write(batch, r);
    return packRows(rows, batch.lines);
  };
}

/**
 * The JSON text of the `column`-th value in a row the encoder wrote (every column is there, in
 * order): a message key without parsing the row.
 */
export function fieldText(row: string, column: number): string {
  let at = 1;
  for (let c = 0; ; c++) {
    at = row.indexOf(':', stringEnd(row, at)) + 1;
    const end = row.charCodeAt(at) === QUOTE ? stringEnd(row, at) : scalarEnd(row, at);
    if (c === column) return row.slice(at, end);
    at = end + 1;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Just past the JSON string starting at `at`. */
function stringEnd(text: string, at: number): number {
  for (let i = at + 1; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === BACKSLASH) i++;
    else if (ch === QUOTE) return i + 1;
  }
  return text.length;
}

/** Just past a number, true, false or null (none holds a comma or a brace). */
function scalarEnd(text: string, at: number): number {
  let i = at;
  while (i < text.length && text[i] !== ',' && text[i] !== '}') i++;
  return i;
}
