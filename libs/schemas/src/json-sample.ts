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
