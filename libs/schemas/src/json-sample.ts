import { SchemaSampleError } from './sample-error';

/** One sample record: a parsed JSON object. */
export type JsonRecord = Record<string, unknown>;

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Parses `sampleData` as one JSON document (an object, or an array of objects) or, failing
 * that, as NDJSON (one object per non-empty line), and returns the records.
 */
export function parseJsonSample(sampleData: string): JsonRecord[] {
  const text = sampleData.replace(/^\uFEFF/, '');
  const lines = nonEmptyLines(text);
  if (lines.length === 0) throw new SchemaSampleError('the sample is empty');
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    // A first line that is a JSON value of its own means NDJSON; anything else is one broken document.
    if (lines.length > 1 && parsesAlone(lines[0].text)) return parseNdjson(lines);
    throw new SchemaSampleError(`the sample is not valid JSON (${describeError(text, err)})`);
  }
  return documentRecords(document);
}

function documentRecords(document: unknown): JsonRecord[] {
  if (isRecord(document)) return [document];
  if (!Array.isArray(document)) {
    throw new SchemaSampleError('the sample must be a JSON object, an array of objects or NDJSON');
  }
  if (document.length === 0) throw new SchemaSampleError('the sample array holds no records');
  const bad = document.findIndex((item) => !isRecord(item));
  if (bad >= 0) throw new SchemaSampleError(`item ${bad + 1} of the sample array is not a JSON object`);
  return document as JsonRecord[];
}

interface Line {
  number: number;
  text: string;
}

function nonEmptyLines(text: string): Line[] {
  return text
    .split(/\r?\n/)
    .map((line, index) => ({ number: index + 1, text: line }))
    .filter((line) => line.text.trim() !== '');
}

function parsesAlone(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function parseNdjson(lines: Line[]): JsonRecord[] {
  return lines.map((line) => {
    let value: unknown;
    try {
      value = JSON.parse(line.text);
    } catch (err) {
      throw new SchemaSampleError(
        `the NDJSON sample is not valid JSON (${describeError(line.text, err, line.number)})`,
      );
    }
    if (!isRecord(value))
      throw new SchemaSampleError(`line ${line.number} of the NDJSON sample is not a JSON object`);
    return value;
  });
}

/** `line L, column C: reason`, from JSON.parse's error, which gives an offset rather than a line. */
function describeError(text: string, err: unknown, firstLine = 1): string {
  const message = err instanceof Error ? err.message : String(err);
  const offset = errorOffset(text, message);
  const reason = message
    .replace(/ in JSON at position \d+.*$/s, '')
    .replace(/, ".*" is not valid JSON$/s, '')
    .replace(/, \.\.\..*$/s, '')
    // V8 quotes the offending character raw, and a line break in the middle of the message reads badly.
    .replace(CONTROL_CHARACTER, (char) => JSON.stringify(char).slice(1, -1));
  if (offset === undefined) return reason;
  const before = text.slice(0, offset).split('\n');
  return `line ${firstLine + before.length - 1}, column ${before[before.length - 1].length + 1}: ${reason}`;
}

function errorOffset(text: string, message: string): number | undefined {
  const position = / at position (\d+)/.exec(message);
  if (position !== null) return Number(position[1]);
  if (/^Unexpected end of JSON input/.test(message)) return text.length;
  return locateSyntaxError(text);
}

/* eslint-disable no-control-regex -- JSON forbids raw control characters in strings, so these must name them. */
const CONTROL_CHARACTER = /[\u0000-\u001f]/g;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.source;
/* eslint-enable no-control-regex */
const WHITESPACE = /[ \t\n\r]*/y;
const SCALAR = new RegExp(`${STRING}|-?(?:0|[1-9]\\d*)(?:\\.\\d+)?(?:[eE][+-]?\\d+)?|true|false|null`, 'y');
const KEY = new RegExp(`${STRING}[ \\t\\n\\r]*:`, 'y');

function skip(pattern: RegExp, text: string, at: number): number {
  pattern.lastIndex = at;
  return pattern.test(text) ? pattern.lastIndex : -1;
}

/**
 * Offset of the first syntax error, for the errors whose message carries no position (V8 says
 * only "Unexpected token 'x'" for a bad literal). Iterative, so deep nesting cannot overflow.
 */
function locateSyntaxError(text: string): number | undefined {
  const open: string[] = [];
  let at = skip(WHITESPACE, text, 0);
  let expectKey = false;
  for (;;) {
    if (expectKey) {
      const next = skip(KEY, text, at);
      if (next < 0) return at;
      at = skip(WHITESPACE, text, next);
    }
    if (text[at] === '{' || text[at] === '[') {
      open.push(text[at] === '{' ? '}' : ']');
      at = skip(WHITESPACE, text, at + 1);
      expectKey = open[open.length - 1] === '}';
      if (text[at] !== open[open.length - 1]) continue;
      open.pop();
      at++;
    } else {
      const next = skip(SCALAR, text, at);
      if (next < 0) return at;
      at = next;
    }
    // After a value: close containers until a comma starts the next value.
    for (;;) {
      at = skip(WHITESPACE, text, at);
      const closer = open[open.length - 1];
      if (closer === undefined) return at < text.length ? at : undefined;
      if (text[at] === ',') {
        at = skip(WHITESPACE, text, at + 1);
        expectKey = closer === '}';
        break;
      }
      if (text[at] !== closer) return at;
      open.pop();
      at++;
    }
  }
}

/** How deep under the top-level object a record array is looked for (`data.items` is two). */
const MAX_RECORD_PATH_DEPTH = 3;

interface Frame {
  kind: 'object' | 'array';
  /** Keys from the top-level object. */
  path: string[];
  key: string | null;
  expectKey: boolean;
  expectItem: boolean;
  items: number;
  objects: number;
}

/**
 * The dot path (`data.items`) of the record array of a JSON document whose top level is one object
 * wrapping its records, as APIs and exports write them (`{"meta": {...}, "data": {"items": [...]}}`):
 * the array of objects, at most three keys down, holding the most records. Null for an array or
 * NDJSON (their records are at the top already) and for an object without such an array (one record).
 * Reads a head of the file too (a cut-off document): one pass over the text, nothing parsed.
 */
export function findRecordPath(text: string): string | null {
  const stack: Frame[] = [];
  let best: { path: string; objects: number } | null = null;
  let seenTop = false;
  /**
   * Containers open inside a value that can hold no candidate (inside an array, or deeper than
   * MAX_RECORD_PATH_DEPTH keys): only their brackets are counted, so a hostile sample nested a
   * million levels deep costs one pass and a few frames, not a frame (and a copied path) per level.
   */
  let skipped = 0;
  const consider = (frame: Frame): void => {
    if (frame.kind !== 'array' || frame.path.length === 0) return;
    if (frame.path.some((k) => k === '' || k.includes('.'))) return;
    if (frame.objects === 0 || frame.objects !== frame.items) return;
    if (best === null || frame.objects > best.objects)
      best = { path: frame.path.join('.'), objects: frame.objects };
  };
  /** A value starts in the innermost container: counted when that is an array. */
  const valueStarts = (isObject: boolean): void => {
    const top = stack[stack.length - 1];
    if (top?.kind === 'array' && top.expectItem) {
      top.items++;
      if (isObject) top.objects++;
      top.expectItem = false;
    }
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === ' ' || c === '\n' || c === '\r' || c === '\t' || c === '\uFEFF') continue;
    if (skipped > 0) {
      if (c === '"') i = stringEnd(text, i);
      else if (c === '{' || c === '[') skipped++;
      else if (c === '}' || c === ']') skipped--;
      continue;
    }
    const top = stack[stack.length - 1];
    if (top === undefined && seenTop) return null; // a second top-level value: NDJSON
    if (c === '"') {
      const j = stringEnd(text, i);
      if (top?.kind === 'object' && top.expectKey) {
        top.key = unescapeKey(text.slice(i + 1, j));
        top.expectKey = false;
      } else valueStarts(false);
      i = j;
    } else if (c === '{' || c === '[') {
      if (top === undefined) {
        if (c === '[') return null;
        seenTop = true;
      }
      valueStarts(c === '{');
      // Inside an array a value has no dot path.
      const path = top === undefined ? [] : top.kind === 'object' ? [...top.path, top.key ?? ''] : null;
      if (path === null || path.length > MAX_RECORD_PATH_DEPTH) {
        skipped = 1;
        continue;
      }
      stack.push({
        kind: c === '{' ? 'object' : 'array',
        path,
        key: null,
        expectKey: c === '{',
        expectItem: c === '[',
        items: 0,
        objects: 0,
      });
    } else if (c === '}' || c === ']') {
      const done = stack.pop();
      if (done) consider(done);
    } else if (c === ',') {
      if (top?.kind === 'object') top.expectKey = true;
      else if (top) top.expectItem = true;
    } else if (c !== ':') {
      valueStarts(false);
    }
  }
  // A cut-off head leaves arrays open: what was seen of them counts.
  for (const frame of stack) consider(frame);
  return best === null ? null : (best as { path: string }).path;
}

/** Offset of the quote closing the string that opens at `start` (the text's length when cut off). */
function stringEnd(text: string, start: number): number {
  let j = start + 1;
  while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
  return j;
}

function unescapeKey(raw: string): string {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}
