/**
 * PostgreSQL's binary COPY written from the fields of clean CSV chunks (ones the fast path's byte check
 * passed, libs/readers/src/fastpath/csv-check.ts), in the stage thread: the PostgreSQL plug-in's CSV
 * encoder. PostgreSQL parses CSV text at some 1.6 CPU s per million narrow rows (integer, double, text,
 * boolean, date) and takes the same rows in binary at some 0.6 s; on a host whose cores the load
 * shares with the platform, that is most of what a large upload costs the database.
 *
 * A value's binary form must be what PostgreSQL's own input function makes of its text, so only what
 * the check's grammars and the target's declared types make certain is written (TargetShape: the
 * types come from the table itself, never from the pipeline's schema alone):
 * - `int` or `bigint` text (`[+-]?[0-9]+`, within the schema type's range) into `integer` (an `int`
 *   column only) or `bigint`;
 * - `double` text (`[+-]?digits[.digits][e±dddd]`, decimal magnitude within ±307) into `double
 *   precision`: the correctly rounded double of the decimal text, as strtod gives it (an exact
 *   quotient for up to 15 digits and no exponent, V8's own correctly rounded parse otherwise);
 * - `boolean` (true/false/yes/no/t/f/y/n/1/0, any case) into `boolean`;
 * - `date` (`YYYY-MM-DD`, 0001-9999) into `date`, as days from 2000-01-01;
 * - `string` into `text`: the field's bytes (valid UTF-8, the check saw to it), quotes and escapes undone.
 * An unquoted empty field is NULL. Any other column (real, numeric, timestamptz, varchar, a type the
 * table was given by hand) keeps the whole job on CSV, as before.
 *
 * A job whose first chunk is small (under BINARY_MIN_BYTES) stays on CSV: a small load goes in one
 * message with its statements (one-message.ts), and the binary form would gain it nothing.
 */
import type { CsvAttributes, FieldType, SchemaField } from '@tapyard/model';
import { csvChars, quotedFieldEnd } from '@tapyard/readers';
import type { CsvChunkPayload, PgBinaryPayload, TargetShape } from '../destination';

const LF = 10;
const CR = 13;
const ZERO = 0x30;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;

const W_INT4 = 0;
const W_INT8 = 1;
const W_FLOAT8 = 2;
const W_BOOL = 3;
const W_DATE = 4;
const W_TEXT = 5;

/** The binary writer of each (schema type, declared column type) pair whose values are certain. */
const WRITERS: Partial<Record<FieldType, Record<string, number>>> = {
  int: { integer: W_INT4, bigint: W_INT8 },
  bigint: { bigint: W_INT8 },
  double: { 'double precision': W_FLOAT8 },
  boolean: { boolean: W_BOOL },
  date: { date: W_DATE },
  string: { text: W_TEXT },
};

/** A job whose first chunk is smaller than this loads as CSV (see the module's comment). */
export const BINARY_MIN_BYTES = 256 * 1024;
/** A piece ends after the row that takes it past this many bytes: the loader sends it while the next is written. */
export const BINARY_PIECE_BYTES = 1 << 20;

/** The memory of one piece: its rows, and room for the row that takes it past BINARY_PIECE_BYTES. */
const PIECE_MEMORY = BINARY_PIECE_BYTES + (64 << 10);
/** Pieces' memory the loaders have sent, given back to this thread (see reuseMemory). */
const spare: ArrayBuffer[] = [];
/** Spare pieces kept: about the pieces in flight between this thread and the loaders' sockets. */
const SPARE_KEPT = 8;

/**
 * Takes back the memory of pieces the loaders have sent (the main thread transfers it): the next
 * pieces are written there instead of into new memory, whose coming and going made the worker's
 * main thread collect garbage for about a third of a large load's CPU.
 */
export function reuseMemory(buffers: ArrayBuffer[]): void {
  for (const b of buffers) if (b.byteLength === PIECE_MEMORY && spare.length < SPARE_KEPT) spare.push(b);
}

/** Memory for a piece: spare, or new (never from Buffer's shared pool, which cannot be transferred). */
function pieceMemory(): Buffer {
  const reused = spare.pop();
  return reused === undefined ? Buffer.allocUnsafeSlow(PIECE_MEMORY) : Buffer.from(reused);
}

/** Binary COPY's header: its signature, no flags, no header extension. */
export const BINARY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
/** Binary COPY's trailer: a tuple of -1 fields. */
export const BINARY_TRAILER = Buffer.from([0xff, 0xff]);

/** The booleans the check lets through start with one of these when true (`t`, `true`, `y`, `yes`, `1`). */
const TRUE_START = new Uint8Array(128);
for (const c of 'tTyY1') TRUE_START[c.charCodeAt(0)] = 1;

/** Exact powers of ten as doubles (10^22 is the last one). */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);

/** Days from 1970-01-01 to the proleptic Gregorian date y-m-d (H. Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}
/** PostgreSQL's date epoch, 2000-01-01, in days from 1970-01-01. */
const PG_EPOCH_DAYS = daysFromCivil(2000, 1, 1);

/**
 * The binary encoder of a job's clean CSV chunks, or null when a file column's declared type (or
 * the target's shape, unknown) leaves the job on CSV.
 */
export function createCsvEncoder(
  columns: SchemaField[],
  fileColumns: string[],
  csv: Pick<CsvAttributes, 'delimiter' | 'quote' | 'escape'>,
  shape?: TargetShape | null,
  /** The smallest first chunk a job writes binary for (tests write any). */
  minBytes = BINARY_MIN_BYTES,
): ((chunk: CsvChunkPayload) => Generator<CsvChunkPayload | PgBinaryPayload>) | null {
  if (!shape) return null;
  const writers: number[] = [];
  const types: string[] = [];
  for (const name of fileColumns) {
    const field = columns.find((c) => c.name === name);
    const declared = shape.columnTypes[name];
    const writer = field && declared !== undefined ? WRITERS[field.type]?.[declared] : undefined;
    if (writer === undefined) return null;
    writers.push(writer);
    types.push(declared);
  }
  const { delim, quote, esc } = csvChars(csv);
  // Made for a binary job only: its piece is a MiB of memory, and a small job (most of them) allocating
  // one made the worker's main thread run a full collection every ~60 jobs (V8 counts such memory).
  let writer: PieceWriter | null = null;
  // Decided on the job's first chunk (see BINARY_MIN_BYTES), then kept: one COPY format per job.
  let binary: boolean | null = null;
  return function* (chunk) {
    binary ??= chunk.bytes.byteLength >= minBytes;
    if (!binary) {
      yield chunk;
      return;
    }
    writer ??= new PieceWriter(Int32Array.from(writers), delim, quote, esc);
    const b = Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength);
    let i = 0;
    for (let left = chunk.rows; left > 0;) {
      const rows = writer.fill(b, i, left);
      i = writer.next;
      left -= rows;
      yield { kind: 'pg-binary', bytes: writer.take(), rows, columns: chunk.columns, types };
    }
  };
}

/**
 * Writes the records of a clean chunk as binary COPY tuples into a piece of its own, until the piece
 * passes BINARY_PIECE_BYTES. One method with its state in locals: it runs once per field.
 */
class PieceWriter {
  // Each piece's memory is its own: the stage thread transfers it, which empties the view.
  private out: Buffer = pieceMemory();
  private at = 0;
  /** Where the record after the last one written starts. */
  next = 0;
  // The month of the last date written: its first day's number, less one (a file's dates mostly
  // share their month with the row before).
  private monthYear = 0;
  private month = 0;
  private monthStart = 0;

  /** The bytes that end an unquoted field. */
  private readonly stops = new Uint8Array(256);
  private view = new DataView(this.out.buffer, this.out.byteOffset, this.out.byteLength);

  constructor(
    private readonly writers: Int32Array,
    private readonly delim: number,
    private readonly quote: number,
    private readonly esc: number,
  ) {
    for (const c of [delim, LF, CR]) this.stops[c] = 1;
  }

  /** The piece written so far; the next is written into new memory. */
  take(): Buffer {
    const piece = this.out.subarray(0, this.at);
    this.out = pieceMemory();
    this.view = new DataView(this.out.buffer, this.out.byteOffset, this.out.byteLength);
    this.at = 0;
    return piece;
  }

  /**
   * Writes records from `i` in `b`, at most `left` of them, until the piece is full; returns how many.
   * An unquoted field is read and written in one pass, by its column's writer (the check guarantees
   * its grammar); a quoted one (only in text columns) is found first, then copied.
   */
  fill(b: Buffer, i: number, left: number): number {
    const { writers, quote, esc, stops } = this;
    const width = writers.length;
    const n = b.length;
    // The most a record takes besides its text fields' bytes: the count, and 12 bytes a field.
    const fixed = 2 + 12 * width;
    let out = this.out;
    let view = this.view;
    let at = this.at;
    let rows = 0;
    while (rows < left && at < BINARY_PIECE_BYTES) {
      if (at + fixed > out.length) ({ out, view } = this.grow(out, at, fixed));
      view.setInt16(at, width);
      at += 2;
      for (let f = 0; f < width; f++) {
        if (f > 0) i++; // the delimiter before every field but the first
        if (b[i] === quote) {
          const end = quotedFieldEnd(b, i, quote, esc);
          const p = end >> 1;
          const escapes = (end & 1) === 1;
          const length = p - i - 1;
          if (at + 4 + length > out.length) ({ out, view } = this.grow(out, at, 4 + length + fixed));
          const lengthAt = at;
          at += 4;
          if (escapes) {
            // A doubled quote is one quote; an escape drops itself before the quote or itself only.
            for (let k = i + 1; k < p; k++) {
              const c = b[k];
              const after = k + 1 < p ? b[k + 1] : -1;
              if (esc < 0 ? c === quote && after === quote : c === esc && (after === quote || after === esc))
                k++;
              out[at++] = b[k];
            }
          } else at += b.copy(out, at, i + 1, p);
          view.setInt32(lengthAt, at - lengthAt - 4);
          i = p + 1;
          continue;
        }
        if (i >= n || stops[b[i]] === 1) {
          // An unquoted empty field: NULL.
          view.setInt32(at, -1);
          at += 4;
          continue;
        }
        switch (writers[f]) {
          case W_INT4:
          case W_INT8: {
            const s = i;
            const negative = b[i] === MINUS;
            if (negative || b[i] === PLUS) i++;
            let v = 0;
            for (; i < n; i++) {
              const c = b[i];
              if (stops[c] === 1) break;
              v = v * 10 + c - ZERO;
            }
            if (negative) v = -v;
            if (writers[f] === W_INT4) {
              view.setInt32(at, 4);
              view.setInt32(at + 4, v);
              at += 8;
            } else {
              view.setInt32(at, 8);
              if (i - s <= 15) {
                // At most 15 characters: exact as a double.
                const hi = Math.floor(v / 4294967296);
                view.setInt32(at + 4, hi);
                view.setUint32(at + 8, v - hi * 4294967296);
              } else view.setBigInt64(at + 4, BigInt(b.toString('latin1', s, i)));
              at += 12;
            }
            break;
          }
          case W_FLOAT8: {
            // At most 15 digits and no exponent: the quotient of two exact doubles, one rounding
            // (Clinger's fast path), as correctly rounded as strtod; otherwise V8's parse of the text,
            // correctly rounded too.
            const s = i;
            const negative = b[i] === MINUS;
            if (negative || b[i] === PLUS) i++;
            let mantissa = 0;
            let digits = 0;
            let fraction = -1;
            let plain = true;
            for (; i < n; i++) {
              const c = b[i];
              if (stops[c] === 1) break;
              if (c === DOT) fraction = 0;
              else if (c >= ZERO && c <= ZERO + 9) {
                mantissa = mantissa * 10 + c - ZERO;
                digits++;
                if (fraction >= 0) fraction++;
              } else plain = false;
            }
            let v: number;
            if (plain && digits <= 15) {
              v = fraction > 0 ? mantissa / POW10[fraction] : mantissa;
              if (negative) v = -v;
            } else v = Number(b.toString('latin1', s, i));
            view.setInt32(at, 8);
            view.setFloat64(at + 4, v);
            at += 12;
            break;
          }
          case W_BOOL:
            view.setInt32(at, 1);
            out[at + 4] = TRUE_START[b[i]];
            at += 5;
            for (i++; i < n && stops[b[i]] === 0; i++);
            break;
          case W_DATE: {
            const y =
              (b[i] - ZERO) * 1000 + (b[i + 1] - ZERO) * 100 + (b[i + 2] - ZERO) * 10 + b[i + 3] - ZERO;
            const m = (b[i + 5] - ZERO) * 10 + b[i + 6] - ZERO;
            if (y !== this.monthYear || m !== this.month) {
              this.monthYear = y;
              this.month = m;
              this.monthStart = daysFromCivil(y, m, 1) - PG_EPOCH_DAYS - 1;
            }
            view.setInt32(at, 4);
            view.setInt32(at + 4, this.monthStart + (b[i + 8] - ZERO) * 10 + b[i + 9] - ZERO);
            at += 8;
            i += 10;
            break;
          }
          default: {
            // Text: copied as it is found.
            const lengthAt = at;
            at += 4;
            let limit = out.length;
            for (; i < n; i++) {
              const c = b[i];
              if (stops[c] === 1) break;
              if (at === limit) {
                ({ out, view } = this.grow(out, at, fixed + 4096));
                limit = out.length;
              }
              out[at++] = c;
            }
            view.setInt32(lengthAt, at - lengthAt - 4);
            // Room for the record's other fields again.
            if (at + fixed > out.length) ({ out, view } = this.grow(out, at, fixed));
          }
        }
      }
      // The record's line break (none after the chunk's last record, possibly).
      if (i < n) i += b[i] === CR && b[i + 1] === LF ? 2 : 1;
      rows++;
    }
    this.at = at;
    this.next = i;
    return rows;
  }

  /** A larger piece with what `out` holds up to `at`, room for `bytes` more. */
  private grow(out: Buffer, at: number, bytes: number): { out: Buffer; view: DataView } {
    const bigger = Buffer.allocUnsafeSlow(Math.max(out.length * 2, at + bytes));
    out.copy(bigger, 0, 0, at);
    this.out = bigger;
    this.view = new DataView(bigger.buffer, bigger.byteOffset, bigger.byteLength);
    return { out: bigger, view: this.view };
  }
}
