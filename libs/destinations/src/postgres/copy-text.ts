/**
 * PostgreSQL COPY in text format (`FORMAT text`: tab delimiter, `\N` for NULL, backslash escapes):
 * the PostgreSQL plug-in's encoder. Loaded in the stage thread: deep type-only imports.
 */
import type { FieldType, SchemaField } from '../../../pipelines/src/pipeline.types';
import type { Value } from '../../../pipelines/src/values/coerce';
import type { TypedBatch } from '../../../pipelines/src/values/typed-batch';

/** COPY text for NULL. */
export const COPY_NULL = '\\N';

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

// Bound once: global lookups per value are slow inside a vm context (as under Jest).
const toText = String;

/** The COPY text of one typed value of `type` (never NULL: the caller writes `\N`). */
function textOf(type: FieldType): (v: Exclude<Value, null>) => string {
  switch (type) {
    case 'string':
      return (v) => escapeCopyText(v as string);
    case 'boolean':
      return (v) => (v ? 't' : 'f');
    case 'date':
    case 'timestamp':
      // Checked ASCII without control characters: nothing to escape.
      return (v) => v as string;
    default:
      return toText;
  }
}

/** The stage-thread encoder: one COPY-text string per batch, rows in batch order. */
export function createEncoder(columns: SchemaField[]): (batch: TypedBatch) => string {
  const texts = columns.map((c) => textOf(c.type));
  const n = columns.length;
  return (batch) => {
    const rows = batch.lines.length;
    const values = batch.values;
    let out = '';
    for (let r = 0; r < rows; r++) {
      // Built by concatenation: V8 ropes make this cheap, with no per-row array (hot path).
      let line = '';
      for (let c = 0; c < n; c++) {
        const v = values[c][r];
        const text = v === null ? COPY_NULL : texts[c](v);
        line = c === 0 ? text : line + '\t' + text;
      }
      out += line + '\n';
    }
    return out;
  };
}
