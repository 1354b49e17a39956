/**
 * PostgreSQL COPY in text format (`FORMAT text`: tab delimiter, `\N` for NULL, backslash escapes):
 * the PostgreSQL plug-in's encoder. Loaded in the stage thread: deep type-only imports.
 */
import type { FieldType, SchemaField, TypedBatch } from '@tapyard/model';

/** Clean CSV chunks of the fast path go out as binary COPY where the target's types allow. */
export { createCsvEncoder, reuseMemory } from './copy-binary';

const BACKSLASH = 0x5c;

/**
 * Escapes a value for COPY text format: backslash, tab, line feed, carriage return, backspace,
 * form feed and vertical tab become `\\`, `\t`, `\n`, `\r`, `\b`, `\f`, `\v`. Other characters
 * are data as they are. (A NUL character cannot be stored; the string coercer rejects it.)
 */
export function escapeCopyText(value: string): string {
  const n = value.length;
  let i = 0;
  for (; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x0e || c === BACKSLASH) break;
  }
  if (i === n) return value;
  let out = value.slice(0, i);
  let run = i;
  for (; i < n; i++) {
    const c = value.charCodeAt(i);
    let esc: string;
    switch (c) {
      case BACKSLASH:
        esc = '\\\\';
        break;
      case 0x09:
        esc = '\\t';
        break;
      case 0x0a:
        esc = '\\n';
        break;
      case 0x0d:
        esc = '\\r';
        break;
      case 0x08:
        esc = '\\b';
        break;
      case 0x0c:
        esc = '\\f';
        break;
      case 0x0b:
        esc = '\\v';
        break;
      default:
        continue;
    }
    out += value.slice(run, i) + esc;
    run = i + 1;
  }
  return out + value.slice(run);
}

/** The expression writing value `v` of `type` as COPY text (never NULL: the caller writes `\N`). */
function textExpression(type: FieldType, v: string): string {
  switch (type) {
    case 'string':
      return `esc(${v})`;
    case 'boolean':
      return `(${v} ? 't' : 'f')`;
    case 'date':
    case 'timestamp':
    case 'decimal':
      // Checked ASCII without control characters: nothing to escape.
      return v;
    case 'float':
    case 'double':
      // Decimal text reads back exactly; only -0 loses its sign in JavaScript's own.
      return `(${v} === 0 && 1 / ${v} < 0 ? '-0' : '' + ${v})`;
    default:
      // Integers and BigInts: their decimal text.
      return `('' + ${v})`;
  }
}

/**
 * The stage-thread encoder: one COPY-text string per batch, rows in batch order. The row loop is
 * generated for the column types (from the schema's closed type list, never from data), so each
 * column's conversion is inlined instead of called through a table: this loop runs once per value
 * of every load into PostgreSQL.
 */
export function createEncoder(columns: SchemaField[]): (batch: TypedBatch) => string {
  const cells = columns.map((c, i) => {
    const v = `c${i}[r]`;
    return `(${v} === null ? '\\\\N' : ${textExpression(c.type, v)})`;
  });
  const body =
    columns.map((_, i) => `const c${i} = values[${i}];`).join('\n') +
    `\nlet out = '';\nfor (let r = 0; r < rows; r++) out += ${cells.join(" + '\\t' + ")} + '\\n';\nreturn out;`;
  const rowsOf = new Function('values', 'rows', 'esc', body) as (
    values: TypedBatch['values'],
    rows: number,
    esc: (s: string) => string,
  ) => string;
  return (batch) => rowsOf(batch.values, batch.lines.length, escapeCopyText);
}
