/**
 * The cells the CSV fast path's check (csv-check.ts) hands to a pipeline's data-quality rules: bytes
 * of the chunk, decoded only when a rule asks for the text.
 */

/** The data-quality rules of one file column, as the check applies them to each cell. */
export interface CsvCellRule {
  /** Whether NULL (an unquoted empty field) passes. */
  readonly nullPasses: boolean;
  /** Whether a cell that is not NULL passes. */
  readonly passes: (cell: CsvCell) => boolean;
}

/**
 * A cell that is not NULL, as the check hands it to a CsvCellRule: its bytes (valid UTF-8, a quoted
 * field's quotes and escapes undone) and, decoded on demand, its text as the reference reader gives
 * it. One object is reused for every cell: a rule must not keep it.
 */
export class CsvCell {
  /** The cell is bytes [start, end) of `bytes`. */
  bytes: Buffer = Buffer.alloc(0);
  start = 0;
  end = 0;
  private ascii = true;
  /** The buffer decoded as latin1, once, when a first ASCII cell's text is asked for. */
  private latin1: string | null = null;
  private decoded: string | null = null;

  /** The cell's text (the reference reader's cell). */
  text(): string {
    if (this.decoded === null) {
      const { bytes, start, end } = this;
      // As the reference reader: one native decoding per buffer and a substring per ASCII cell (a
      // native call per cell costs more than checking the rest of the record).
      if (this.isAscii()) {
        this.latin1 ??= bytes.toString('latin1');
        this.decoded = this.latin1.substring(start, end);
      } else this.decoded = bytes.toString('utf8', start, end);
    }
    return this.decoded;
  }

  /** Whether every byte of the cell is ASCII. */
  isAscii(): boolean {
    return this.ascii || asciiRange(this.bytes, this.start, this.end);
  }

  /** Starts on a buffer (`ascii`: all of it is). */
  reset(bytes: Buffer, ascii: boolean): void {
    this.bytes = bytes;
    this.ascii = ascii;
    this.latin1 = null;
  }

  at(start: number, end: number): CsvCell {
    this.start = start;
    this.end = end;
    this.decoded = null;
    return this;
  }
}

/**
 * The cell of bytes [s, e), a quoted field's inside, without its escapes, as the reference reads it:
 * a doubled quote is one quote, the escape before the quote or itself is dropped (elsewhere it stays).
 */
export function unescapedCell(b: Buffer, s: number, e: number, quote: number, esc: number): CsvCell {
  const out = Buffer.alloc(e - s);
  let k = 0;
  for (let p = s; p < e; p++) {
    if ((b[p] === quote || b[p] === esc) && p + 1 < e && (b[p + 1] === quote || b[p + 1] === esc)) p++;
    out[k++] = b[p];
  }
  const cell = new CsvCell();
  cell.reset(out, false);
  return cell.at(0, k);
}

function asciiRange(b: Buffer, s: number, e: number): boolean {
  for (let k = s; k < e; k++) if (b[k] >= 0x80) return false;
  return true;
}
