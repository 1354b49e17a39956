/**
 * Streaming JSON reader. The shape is detected from the first non-whitespace character:
 * - `[`: an array of records, streamed element by element;
 * - `{` with `recordPath` (e.g. `data.items`): the array at that path inside the document is
 *   streamed element by element; the rest of the document is skipped without being buffered,
 *   and reading stops once that array closes;
 * - `{` without `recordPath`: NDJSON when the first value ends on the first line (then every
 *   line is one record), else a (pretty-printed) document: each top-level value is one record,
 *   so a single object document is one record.
 *
 * A byte-level scanner tracks strings, escapes and nesting depth (a counter, so 100,000 levels
 * cost nothing); each record's text is cut out of the decoded chunk, checked (depth, size, UTF-8)
 * and only then JSON.parse'd. The cell holds `JSON.stringify` of the parsed value, except when
 * the record has a number of 16 or more digits: then the original text (trimmed) is kept, so
 * big integers and long decimals lose no precision. Records may be any JSON value; whether a
 * non-object is acceptable is for the loader to decide.
 */
import { ByteInput, ChunkDecoder, DecodedChunk, DEFAULT_MIN_CHUNK, rechunk } from './chunks';
import {
  BatchSink,
  DEFAULT_BATCH_ROWS,
  DEFAULT_MAX_BYTES,
  RAW_BYTES,
  RAW_LIMIT,
  formatBytes,
  positiveOption,
} from './batch-sink';
import { FatalReadError, RecordBatch } from './record-batch';

export interface JsonReadOptions {
  /** Dot path to the array of records inside a JSON document, e.g. `data.items`; empty = top level. */
  recordPath?: string | null;
  /** Records (rows plus row errors) per yielded batch; default 5,000. */
  batchRows?: number;
  /** Largest record; default 16 MiB. A larger record is a row error. */
  maxRecordBytes?: number;
  /** Deepest nesting inside one record; default 64. Deeper is a row error. */
  maxDepth?: number;
  /** Input chunks smaller than this are coalesced first; default 64 KiB (tests use 1). */
  minChunkBytes?: number;
}

export const JSON_SHAPE_ERROR =
  'JSON input must be an array of records, NDJSON, or an object with recordPath';

/** Reads JSON records from `input` and yields them in batches of up to `batchRows` records. */
export async function* readJson(input: ByteInput, opts: JsonReadOptions = {}): AsyncGenerator<RecordBatch> {
  const scanner = new JsonScanner(opts);
  const decoder = new ChunkDecoder('utf-8');
  const sink = scanner.sink;
  for await (const chunk of rechunk(
    input,
    positiveOption('minChunkBytes', opts.minChunkBytes, DEFAULT_MIN_CHUNK),
  )) {
    scanner.feed(decoder.decode(chunk));
    for (let b = sink.take(); b !== undefined; b = sink.take()) yield b;
    if (scanner.done) break;
  }
  if (!scanner.done) {
    const tail = decoder.end();
    if (tail.length > 0) scanner.feed(tail);
  }
  scanner.finish();
  for (let b = sink.take(); b !== undefined; b = sink.take()) yield b;
}

const LF = 10;
const CR = 13;
const TAB = 9;
const SPACE = 32;
const QUOTE = 34;
const COMMA = 44;
const COLON = 58;
const LBRACKET = 91;
const BSLASH = 92;
const RBRACKET = 93;
const LBRACE = 123;
const RBRACE = 125;
const NONE = 0x7fffffff;
const MAX_KEY_CHARS = 64 * 1024;
const EMPTY_CHUNK = new DecodedChunk(Buffer.alloc(0), 'ascii');
// Bound once: a global lookup per record is slow inside a vm context (as under Jest).
const jsonParse = JSON.parse;
const jsonStringify = JSON.stringify;

// Modes.
const DETECT = 0;
const ARRAY = 1; // inside the array of records
const SEQ = 2; // top-level values (a document, or NDJSON)
const PATH = 3; // walking the document towards recordPath
const AFTER_ARRAY = 4; // after a top-level array: only whitespace may follow
const DONE = 5;
const TRAILING = 6; // collecting the start of unexpected data after a top-level array

// PATH sub-states (at the depth of the deepest matched object).
const P_KEY = 0;
const P_COLON = 1;
const P_VALUE = 2;
const P_SKIP = 3;

function isStructural(c: number): boolean {
  return (
    c <= SPACE ||
    c === COMMA ||
    c === COLON ||
    c === QUOTE ||
    c === LBRACE ||
    c === RBRACE ||
    c === LBRACKET ||
    c === RBRACKET
  );
}

function errorDetail(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.length > 200 ? `${msg.slice(0, 200)}…` : msg;
}

class JsonScanner {
  readonly sink: BatchSink;
  done = false;
  private readonly maxBytes: number;
  private readonly maxDepth: number;
  private readonly path: string[];
  private readonly pathText: string;

  private mode = DETECT;
  private depth = 0;
  private inString = false;
  /** A backslash ended the previous chunk inside a string. */
  private escapePending = false;
  private line = 1;

  // The record in progress.
  private elemActive = false;
  /** It ends at the end of its line (NDJSON, or a top-level scalar), not by depth. */
  private elemByLine = false;
  private elemLine = 0;
  /** Depth outside the record (its own brackets are deeper). */
  private elemBase = 0;
  private elemIndex = 0;
  private parts: string[] = [];
  private partsBytes = 0;
  /** Too deep or too large: no longer captured; `rawPrefix` keeps its start. */
  private dropped: string | null = null;
  private rawPrefix = '';
  private elemBadOffset = -1;
  private bigNumber = false;
  private inScalar = false;
  private scalarDigits = 0;

  // SEQ.
  private ndjson: boolean | null = null;
  // ARRAY: depth inside the array of records.
  private arrayDepth = 0;
  private topLevelArray = false;
  private trailingRaw = '';
  private trailingLine = 0;
  /** A comma was seen and no element after it yet. */
  private afterComma = false;
  // PATH.
  private pathLevel = 0;
  private pstate = P_KEY;
  private keyCapture = false;
  private keyRaw = '';
  private key: string | null = null;

  // The chunk being scanned.
  private chunk = EMPTY_CHUNK;
  private badPos: number[] = [];
  private badOffsets: number[] = [];
  private badIdx = 0;

  constructor(opts: JsonReadOptions) {
    this.maxBytes = positiveOption('maxRecordBytes', opts.maxRecordBytes, DEFAULT_MAX_BYTES);
    this.maxDepth = positiveOption('maxDepth', opts.maxDepth, 64);
    this.sink = new BatchSink(positiveOption('batchRows', opts.batchRows, DEFAULT_BATCH_ROWS));
    const recordPath = (opts.recordPath ?? '').trim();
    this.path = recordPath === '' ? [] : recordPath.split('.');
    this.pathText = recordPath;
    if (this.path.some((p) => p === '')) {
      throw new FatalReadError(`recordPath '${recordPath}' is not a dot path like data.items`);
    }
  }

  feed(chunk: DecodedChunk): void {
    if (this.done) return;
    const s = chunk.bytes;
    const n = s.length;
    this.chunk = chunk;
    this.badPos = chunk.badPos;
    this.badOffsets = chunk.badOffsets;
    this.badIdx = 0;
    let i = 0;
    let elemStart = 0;
    let keyStart = 0;
    const scalarAtStart = this.inScalar;
    this.inScalar = false;
    if (this.mode === TRAILING) return this.trailing(0);
    if (this.escapePending && n > 0) {
      this.escapePending = false;
      if (s[0] !== LF) i = 1;
    }

    while (i < n) {
      if (this.inString) {
        let c = 0;
        while (i < n) {
          c = s[i];
          if (c === QUOTE || c === BSLASH || c === LF) break;
          i++;
        }
        if (i === n) break;
        if (c === BSLASH) {
          if (i + 1 === n) {
            this.escapePending = true;
            i++;
          } else i += s[i + 1] === LF ? 1 : 2;
          continue;
        }
        if (c === LF) {
          // A raw line break inside a string is invalid JSON; NDJSON still ends the line here.
          if (this.elemActive && this.elemByLine) {
            this.inString = false;
            this.endElement(elemStart, i);
          }
          this.line++;
          i++;
          continue;
        }
        this.inString = false;
        if (this.keyCapture) {
          this.keyCapture = false;
          this.finishKey(chunk.slice(keyStart, i));
        }
        i++;
        continue;
      }

      const c = s[i];
      if (c === SPACE || c === TAB || c === CR) {
        i++;
        continue;
      }
      if (c === LF) {
        if (this.elemActive && this.elemByLine) this.endElement(elemStart, i);
        this.line++;
        i++;
        continue;
      }

      switch (this.mode) {
        case DETECT:
          if (c === LBRACKET) {
            if (this.path.length > 0) {
              throw new FatalReadError(
                `recordPath '${this.pathText}' needs a JSON object at the top level, but the input is an array`,
                this.line,
              );
            }
            this.mode = ARRAY;
            this.topLevelArray = true;
            this.depth = 1;
            this.arrayDepth = 1;
            i++;
          } else if (c === LBRACE) {
            if (this.path.length > 0) {
              this.mode = PATH;
              this.depth = 1;
              i++;
            } else this.mode = SEQ;
          } else {
            throw new FatalReadError(JSON_SHAPE_ERROR, this.line);
          }
          continue;

        case ARRAY:
          if (!this.elemActive && this.depth === this.arrayDepth) {
            if (c === COMMA) {
              if (this.afterComma || this.elemIndex === 0) {
                this.sink.addError(this.line, `unexpected ',' in the array at line ${this.line}`, ',');
              }
              this.afterComma = true;
              i++;
              continue;
            }
            if (c === RBRACKET) {
              this.closeArray();
              i++;
              if (this.done) return;
              continue;
            }
            this.afterComma = false;
            elemStart = i;
            this.startElement(this.arrayDepth, false, i);
          } else if (this.depth === this.arrayDepth && (c === COMMA || c === RBRACKET)) {
            this.endElement(elemStart, i);
            if (c === RBRACKET) {
              this.closeArray();
              i++;
              if (this.done) return;
            } else {
              this.afterComma = true;
              i++;
            }
            continue;
          }
          break;

        case SEQ:
          if (!this.elemActive) {
            elemStart = i;
            this.startElement(0, this.ndjson === true || (c !== LBRACE && c !== LBRACKET), i);
          }
          break;

        case PATH:
          if (this.depth === this.pathLevel + 1) {
            i = this.pathStep(c, i);
            if (this.keyCapture) keyStart = i;
            continue;
          }
          break;

        case AFTER_ARRAY:
          this.mode = TRAILING;
          this.trailingLine = this.line;
          this.trailing(i);
          return;
      }

      // Generic handling of one character (in a record, or skipped in PATH mode).
      if (c === QUOTE) {
        this.inString = true;
        this.inScalar = false;
        i++;
      } else if (c === LBRACE || c === LBRACKET) {
        this.inScalar = false;
        this.depth++;
        if (this.elemActive && this.dropped === null && this.depth - this.elemBase > this.maxDepth) {
          this.drop(`nesting deeper than ${this.maxDepth} levels`);
        }
        i++;
      } else if (c === RBRACE || c === RBRACKET) {
        this.inScalar = false;
        const floor = this.elemActive ? this.elemBase : 0;
        // An unmatched closing bracket stays inside the record (JSON.parse will reject it).
        if (this.depth > floor) this.depth--;
        i++;
        if (this.mode === SEQ && this.elemActive && !this.elemByLine && this.depth === 0) {
          this.endElement(elemStart, i);
          if (this.ndjson === null) this.ndjson = this.elemLine === this.line;
        }
      } else if (c === COMMA || c === COLON) {
        this.inScalar = false;
        i++;
      } else {
        // A scalar (number, literal or garbage): count digits to spot numbers JSON.parse would round.
        let d = i === 0 && scalarAtStart ? this.scalarDigits : 0;
        while (i < n) {
          const b = s[i];
          if (b >= 0x30 && b <= 0x39) d++;
          else if (isStructural(b)) break;
          else if (b === 0x65 || b === 0x45) d = -NONE;
          i++;
        }
        if (d >= 16 && this.elemActive) this.bigNumber = true;
        this.inScalar = i === n;
        this.scalarDigits = d;
      }
    }

    // End of the chunk.
    if (this.elemActive) {
      if (this.badIdx < this.badPos.length && this.elemBadOffset < 0) {
        this.elemBadOffset = this.badOffsets[this.badIdx];
      }
      this.pushPart(elemStart, n);
    }
    if (this.keyCapture && this.keyRaw.length < MAX_KEY_CHARS) this.keyRaw += chunk.slice(keyStart, n);
  }

  finish(): void {
    if (this.done) return this.sink.finish(false);
    this.chunk = EMPTY_CHUNK;
    this.badPos = [];
    switch (this.mode) {
      case DETECT:
        throw new FatalReadError('the file is empty');
      case TRAILING:
        this.reportTrailing();
        break;
      case PATH:
        throw new FatalReadError(
          `the JSON document ends before an array was found at recordPath '${this.pathText}'`,
          this.line,
        );
      case ARRAY: {
        const line = this.elemActive ? this.elemLine : this.line;
        const raw = this.elemActive ? this.elementRaw(0, 0) : '';
        this.sink.addError(line, 'unexpected end of input inside the array', raw);
        break;
      }
      case SEQ:
        if (this.elemActive) {
          if (this.elemByLine) this.endElement(0, 0);
          else {
            this.sink.addError(
              this.elemLine,
              `unexpected end of input inside the JSON value starting at line ${this.elemLine}`,
              this.elementRaw(0, 0),
            );
          }
        }
        break;
    }
    this.elemActive = false;
    this.sink.finish(false);
  }

  private startElement(base: number, byLine: boolean, at: number): void {
    this.elemActive = true;
    this.elemByLine = byLine;
    this.elemBase = base;
    this.elemLine = this.line;
    this.elemIndex++;
    this.parts = [];
    this.partsBytes = 0;
    this.dropped = null;
    this.rawPrefix = '';
    this.bigNumber = false;
    this.inScalar = false;
    this.elemBadOffset = -1;
    const bad = this.badPos;
    let k = this.badIdx;
    while (k < bad.length && bad[k] < at) k++;
    this.badIdx = k;
  }

  private pushPart(s: number, e: number): void {
    if (e <= s) return;
    if (this.dropped === null && this.partsBytes + (e - s) > this.maxBytes) {
      this.drop(`record exceeds ${formatBytes(this.maxBytes)}`);
    }
    if (this.dropped !== null) {
      this.growRaw(s, e);
      return;
    }
    this.parts.push(this.chunk.slice(s, e));
    this.partsBytes += e - s;
  }

  /**
   * Stops capturing the record in progress: from now on only its first RAW_LIMIT characters are
   * kept (what came in earlier chunks now, the rest of this chunk at its end).
   */
  private drop(reason: string): void {
    const head = this.parts.join('');
    this.rawPrefix = head.length > RAW_LIMIT ? head.slice(0, RAW_LIMIT) : head;
    this.parts = [];
    this.dropped = reason;
  }

  private growRaw(s: number, e: number): void {
    if (this.rawPrefix.length >= RAW_LIMIT) return;
    const raw = this.rawPrefix + this.chunk.slice(s, Math.min(e, s + RAW_BYTES));
    this.rawPrefix = raw.length > RAW_LIMIT ? raw.slice(0, RAW_LIMIT) : raw;
  }

  /** The start of the record in progress, up to position `at` of the current chunk. */
  private elementRaw(elemStart: number, at: number): string {
    if (this.dropped !== null) return this.rawPrefix;
    let head = this.parts.join('');
    if (head.length < RAW_LIMIT) head += this.chunk.slice(elemStart, Math.min(at, elemStart + RAW_BYTES));
    return head.length > RAW_LIMIT ? head.slice(0, RAW_LIMIT) : head;
  }

  private endElement(elemStart: number, end: number): void {
    this.elemActive = false;
    this.inScalar = false;
    if (this.elemByLine) {
      // A line ends the record whatever its state (an unbalanced line is simply invalid).
      this.depth = this.elemBase;
      this.inString = false;
    }
    const line = this.elemLine;
    const bad = this.badPos;
    if (this.elemBadOffset < 0 && this.badIdx < bad.length && bad[this.badIdx] < end) {
      this.elemBadOffset = this.badOffsets[this.badIdx];
    }
    let reason: string | null = null;
    let text: string;
    if (this.dropped !== null) {
      this.growRaw(elemStart, end);
      reason = this.dropped;
      text = this.rawPrefix;
    } else if (this.partsBytes + (end - elemStart) > this.maxBytes) {
      reason = `record exceeds ${formatBytes(this.maxBytes)}`;
      text = this.elementRaw(elemStart, end);
    } else {
      text = this.chunk.slice(elemStart, end);
      if (this.parts.length > 0) {
        this.parts.push(text);
        text = this.parts.join('');
      }
      text = text.trim();
    }
    this.parts = [];
    this.partsBytes = 0;
    if (reason === null && this.elemBadOffset >= 0)
      reason = `invalid UTF-8 at byte offset ${this.elemBadOffset}`;
    if (reason === null) {
      if (text === '') return;
      let value: unknown;
      try {
        value = jsonParse(text);
      } catch (err) {
        reason = this.invalidReason(line, err);
      }
      if (reason === null) {
        this.sink.addRow([this.bigNumber ? text : jsonStringify(value)], line);
        return;
      }
    }
    this.sink.addError(line, reason, text.trim());
  }

  private invalidReason(line: number, err: unknown): string {
    if (this.mode === ARRAY) return `array element ${this.elemIndex} is not valid JSON: ${errorDetail(err)}`;
    if (this.ndjson === true) return `line ${line} is not valid JSON: ${errorDetail(err)}`;
    return `the JSON value starting at line ${line} is not valid: ${errorDetail(err)}`;
  }

  /** Keeps the start of the data after a top-level array, then reports it (at most RAW_LIMIT characters are read). */
  private trailing(from: number): void {
    this.trailingRaw += this.chunk.slice(from, Math.min(this.chunk.length, from + RAW_BYTES));
    if (this.trailingRaw.length >= RAW_LIMIT) this.reportTrailing();
  }

  private reportTrailing(): void {
    this.sink.addError(
      this.trailingLine,
      'unexpected data after the end of the array',
      this.trailingRaw.trimEnd(),
    );
    this.mode = DONE;
    this.done = true;
  }

  private closeArray(): void {
    this.depth--;
    if (this.topLevelArray) this.mode = AFTER_ARRAY;
    else {
      this.mode = DONE;
      this.done = true;
    }
  }

  /** One character at the depth of the deepest matched object on the way to recordPath. */
  private pathStep(c: number, i: number): number {
    const segment = this.path[this.pathLevel];
    switch (c) {
      case QUOTE:
        this.inString = true;
        if (this.pstate === P_KEY) {
          this.keyCapture = true;
          this.keyRaw = '';
        } else this.valueStart(segment);
        return i + 1;
      case COLON:
        if (this.pstate === P_COLON) this.pstate = P_VALUE;
        return i + 1;
      case COMMA:
        this.pstate = P_KEY;
        this.key = null;
        return i + 1;
      case RBRACE:
      case RBRACKET:
        throw new FatalReadError(
          `no array was found at recordPath '${this.pathText}' (no key '${segment}' at line ${this.line})`,
          this.line,
        );
      case LBRACE:
      case LBRACKET:
        this.depth++;
        if (this.pstate === P_VALUE && this.key === segment) {
          if (this.pathLevel === this.path.length - 1) {
            if (c !== LBRACKET) this.notAn('array');
            this.mode = ARRAY;
            this.arrayDepth = this.depth;
          } else {
            if (c !== LBRACE) this.notAn('object');
            this.pathLevel++;
            this.pstate = P_KEY;
            this.key = null;
          }
        } else this.pstate = P_SKIP;
        return i + 1;
      default:
        this.valueStart(segment);
        return i + 1;
    }
  }

  private valueStart(segment: string): void {
    if (this.pstate === P_VALUE && this.key === segment) {
      this.notAn(this.pathLevel === this.path.length - 1 ? 'array' : 'object');
    }
    this.pstate = P_SKIP;
  }

  private notAn(kind: 'array' | 'object'): never {
    const at = this.path.slice(0, this.pathLevel + 1).join('.');
    throw new FatalReadError(
      `the value at '${at}' (recordPath '${this.pathText}') is not an ${kind}`,
      this.line,
    );
  }

  private finishKey(tail: string): void {
    let key: string | null = null;
    if (this.keyRaw.length + tail.length <= MAX_KEY_CHARS) {
      try {
        key = JSON.parse(`"${this.keyRaw}${tail}"`) as string;
      } catch {
        key = null;
      }
    }
    this.keyRaw = '';
    this.key = key;
    this.pstate = P_COLON;
  }
}
