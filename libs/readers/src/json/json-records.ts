/**
 * Cuts records out of a JSON input as the grammar recognises it. Which values are records depends
 * on the shape, fixed by the first value:
 * - `[`: the elements of the top-level array (ARRAY);
 * - `{` with a recordPath: the elements of the array at that path (PATH);
 * - `{` otherwise: JSON Lines when the first value ends on its first line, else one document that
 *   is one record (FIRST until that is known, then LINES or DOC);
 * - with `lines` set (a .jsonl / .ndjson file): JSON Lines from the start, any value per line.
 *
 * Error policy. A JSON array or document is one JSON text: the first byte that breaks the grammar
 * ends the read with a FatalReadError naming its byte offset and line, so nothing of a malformed
 * file is loaded (the load runs in one transaction). In JSON Lines every line is its own text: a
 * line that is not exactly one JSON value is a rejected record with its line number, and the next
 * line is read. In every shape a record deeper than maxDepth, larger than maxRecordBytes or holding
 * invalid UTF-8 is a rejected record, not a failure of the file.
 */
import { BatchSink, RAW_BYTES, RAW_LIMIT } from '../batch-sink';
import { DecodedChunk } from '../chunks';
import { FatalReadError } from '../record-batch';
import { JsonGrammar, S_TOP_AFTER } from './json-grammar';
import { LBRACE, LBRACKET, LF } from './json-syntax';
import { EMPTY_CHUNK, RecordCapture } from './record-capture';

export const JSON_SHAPE_ERROR =
  'JSON input must be an array of records, NDJSON, or an object with recordPath';

const DETECT = 0;
const ARRAY = 1;
const PATH = 2;
const FIRST = 3;
const DOC = 4;
const LINES = 5;

const MAX_KEY_CHARS = 64 * 1024;
// Bound once: a global lookup per record is slow inside a vm context (as under Jest).
const jsonParse = JSON.parse;
const jsonStringify = JSON.stringify;

export interface JsonScanOptions {
  /** Segments of the dot path to the records array; empty: no recordPath. */
  path: string[];
  lines: boolean;
  maxBytes: number;
  maxDepth: number;
  sink: BatchSink;
}

export class JsonRecordScanner extends JsonGrammar {
  private mode = DETECT;
  /** Depth of the records' parent; -1 while no values are records. */
  private recDepth = -1;
  private readonly capture: RecordCapture;
  private readonly sink: BatchSink;
  private readonly path: string[];
  private readonly maxDepth: number;
  private chunk = EMPTY_CHUNK;
  private endOffset = 0;
  /** JSON Lines: the record of the current line, committed when the line ends. */
  private pending: { cell: string | null; reason: string | null; line: number; raw: string } | null = null;
  // recordPath: segments matched so far, the last key read in the matched object, the key being read.
  private matched = 0;
  private pathFound = false;
  private lastKey: string | null = null;
  /** JSON Lines: the start of the line the next chunk continues (for a reject's raw text). */
  private lineHead = '';
  private keyFrom = -1;
  private keyRaw = '';

  constructor(opts: JsonScanOptions) {
    super();
    this.sink = opts.sink;
    this.path = opts.path;
    this.maxDepth = opts.maxDepth;
    this.lines = opts.lines && opts.path.length === 0;
    this.capture = new RecordCapture(opts.maxBytes);
  }

  feed(chunk: DecodedChunk): void {
    this.chunk = chunk;
    this.capture.setChunk(chunk);
    this.endOffset = chunk.offset + chunk.length;
    this.scan(chunk.bytes, 0, chunk.length);
    this.capture.chunkEnd();
    // Any shape but an array or a document may turn out to be JSON Lines.
    if (this.mode !== ARRAY && this.mode !== PATH && this.mode !== DOC) this.keepLineHead(chunk);
    if (this.keyFrom >= 0) {
      if (this.keyRaw.length < MAX_KEY_CHARS) this.keyRaw += chunk.slice(this.keyFrom, chunk.length);
      this.keyFrom = 0;
    }
  }

  finish(): void {
    this.chunk = EMPTY_CHUNK;
    this.capture.setChunk(EMPTY_CHUNK);
    if (this.mode === DETECT) throw new FatalReadError('the file is empty');
    this.endOfInput();
    if (this.mode === PATH && !this.pathFound) {
      throw new FatalReadError(
        `the JSON document ends before an array was found at recordPath '${this.path.join('.')}'`,
        this.line,
      );
    }
    this.sink.finish(false);
  }

  protected valueStart(i: number, c: number): void {
    const depth = this.depth;
    if (this.mode === DETECT) this.detect(c);
    if (depth === this.recDepth) {
      this.capture.begin(i, this.line);
    } else if (
      this.capture.active &&
      (c === LBRACE || c === LBRACKET) &&
      depth + 1 - this.recDepth > this.maxDepth
    ) {
      this.capture.drop(`nesting deeper than ${this.maxDepth} levels`);
    }
    if (this.mode === PATH && !this.pathFound && depth === this.matched + 1) this.pathValue(c);
  }

  protected valueEnd(end: number): void {
    const depth = this.depth;
    if (this.capture.active) {
      if (this.digits >= 16) this.capture.bigNumber = true;
      if (depth === this.recDepth) this.record(end);
    }
    if (this.mode === PATH) {
      if (this.pathFound && depth === this.recDepth - 1) this.recDepth = -1;
      else if (!this.pathFound && depth === this.matched) {
        throw new FatalReadError(
          `no array was found at recordPath '${this.path.join('.')}' (no key '${this.path[this.matched]}' ` +
            `in the object that ends at line ${this.line})`,
          this.line,
        );
      }
    } else if (this.mode === FIRST && depth === 0) {
      if (this.pending !== null && this.pending.line === this.line) {
        this.mode = LINES;
        this.lines = true;
      } else {
        this.mode = DOC;
        this.lineEnd();
      }
    }
  }

  protected keyStart(i: number): void {
    if (this.mode === PATH && !this.pathFound && this.depth === this.matched + 1) {
      this.keyFrom = i + 1;
      this.keyRaw = '';
    }
  }

  protected keyEnd(i: number): void {
    if (this.keyFrom < 0) return;
    const raw = this.keyRaw + this.chunk.slice(this.keyFrom, i);
    this.keyFrom = -1;
    this.keyRaw = '';
    this.lastKey = raw.length <= MAX_KEY_CHARS ? (jsonParse(`"${raw}"`) as string) : null;
  }

  protected lineEnd(): void {
    const p = this.pending;
    if (p === null) return;
    this.pending = null;
    if (p.cell !== null) this.sink.addRow([p.cell], p.line);
    else this.sink.addError(p.line, p.reason ?? 'rejected', p.raw);
  }

  protected syntaxError(i: number, problem: string): void {
    const line = this.line;
    if (this.mode === DETECT && !this.lines) throw new FatalReadError(JSON_SHAPE_ERROR, line);
    if (this.lines) {
      if (this.mode === DETECT) this.detect(-1);
      const raw = this.lineText(i);
      this.capture.active = false;
      this.pending = null;
      const what =
        this.st === S_TOP_AFTER
          ? `holds more than one JSON value (${problem})`
          : `is not valid JSON: ${problem}`;
      this.sink.addError(line, `line ${line} ${what}`, raw);
      return;
    }
    const at = `at byte offset ${i < 0 ? this.endOffset : this.chunk.offset + i} (line ${line})`;
    if (this.st === S_TOP_AFTER) {
      const what = this.mode === ARRAY ? 'the JSON array' : 'the JSON document';
      throw new FatalReadError(
        `unexpected data after the end of ${what} ${at}: ${problem}; several JSON values must be ` +
          'an array, or JSON Lines (one value per line, in a .jsonl or .ndjson file)',
        line,
      );
    }
    const what = this.mode === ARRAY ? 'the JSON array' : 'the JSON document';
    throw new FatalReadError(`${what} is not well-formed ${at}: ${problem}`, line);
  }

  /** Fixes the shape from the first value's first byte. */
  private detect(c: number): void {
    const pathText = this.path.join('.');
    if (this.path.length > 0) {
      if (c !== LBRACE) {
        throw new FatalReadError(
          c === LBRACKET
            ? `recordPath '${pathText}' needs a JSON object at the top level, but the input is an array`
            : JSON_SHAPE_ERROR,
          this.line,
        );
      }
      this.mode = PATH;
    } else if (this.lines) {
      this.mode = LINES;
      this.recDepth = 0;
    } else if (c === LBRACKET) {
      this.mode = ARRAY;
      this.recDepth = 1;
    } else if (c === LBRACE) {
      this.mode = FIRST;
      this.recDepth = 0;
    } else throw new FatalReadError(JSON_SHAPE_ERROR, this.line);
  }

  /** A value of the object matched so far on the way to recordPath, under key `this.lastKey`. */
  private pathValue(c: number): void {
    const key = this.lastKey;
    this.lastKey = null;
    if (key !== this.path[this.matched]) return;
    const last = this.matched === this.path.length - 1;
    if (c !== (last ? LBRACKET : LBRACE)) {
      throw new FatalReadError(
        `the value at '${this.path.slice(0, this.matched + 1).join('.')}' (recordPath ` +
          `'${this.path.join('.')}') is not an ${last ? 'array' : 'object'}`,
        this.line,
      );
    }
    if (last) {
      this.pathFound = true;
      this.recDepth = this.depth + 1;
    } else this.matched++;
  }

  private record(end: number): void {
    const { text, reason } = this.capture.end(end);
    const line = this.capture.line;
    let cell: string | null = null;
    let why = reason;
    if (why === null) {
      try {
        const value: unknown = jsonParse(text);
        cell = this.capture.bigNumber ? text : jsonStringify(value);
      } catch (err) {
        // The grammar accepted it, so JSON.parse should too; if not, refuse rather than guess.
        why = `not valid JSON: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    if (this.mode === LINES || this.mode === FIRST) {
      this.pending = { cell, reason: why, line, raw: text };
      return;
    }
    if (cell !== null) this.sink.addRow([cell], line);
    else this.sink.addError(line, why ?? 'rejected', text);
  }

  /**
   * The line of position `i` of the current chunk (-1: its end) up to and including that byte, for
   * a reject: the same text whatever the chunk sizes.
   */
  private lineText(i: number): string {
    const s = this.chunk.bytes;
    const to = i < 0 ? s.length : s[i] === LF ? i : i + 1;
    let from = to;
    while (from > 0 && s[from - 1] !== LF && to - from < RAW_BYTES) from--;
    const text = (from === 0 ? this.lineHead : '') + this.chunk.slice(from, to);
    return text.length > RAW_LIMIT ? text.slice(0, RAW_LIMIT) : text;
  }

  private keepLineHead(chunk: DecodedChunk): void {
    const n = chunk.length;
    const nl = chunk.bytes.lastIndexOf(LF);
    if (nl >= 0) this.lineHead = chunk.slice(nl + 1, Math.min(n, nl + 1 + RAW_BYTES));
    else if (this.lineHead.length < RAW_LIMIT) this.lineHead += chunk.slice(0, Math.min(n, RAW_BYTES));
  }
}
