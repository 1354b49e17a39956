/** Internals shared by the readers: defaults, RowError.raw, and cutting rows into batches. */
import { FatalReadError, RecordBatch, RowError } from './record-batch';

export const DEFAULT_BATCH_ROWS = 5_000;
/**
 * A batch is also cut once its rows hold this many bytes (see BatchSink.addRow), so that large
 * records make short batches: by row count alone, 5,000 records of up to 16 MiB each could be one
 * batch of 78 GiB (192 records of 1 MiB were one batch of 192 MiB), all in the stage thread's
 * heap at once with the typed copy made of it. 32 MiB is well above what 5,000 ordinary rows fill
 * (a few hundred bytes each: a few MiB), so they are still cut by count, and twice the largest
 * record, so a batch of the largest records still holds two of them.
 */
export const DEFAULT_BATCH_BYTES = 32 * 1024 * 1024;
/** What a batch's budget counts per cell beyond its text: the pointer in its row. */
const CELL_BYTES = 8;
/** Default limit for one CSV field or one JSON/XML record. */
export const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;
/** Length limit of `RowError.raw`. */
export const RAW_LIMIT = 1_000;
/** Bytes to keep for a RowError.raw: RAW_LIMIT characters of up to 4 bytes each. */
export const RAW_BYTES = 4 * RAW_LIMIT;

/** `16 MiB` for whole mebibytes, else `1234 bytes`; used in error reasons. */
export function formatBytes(n: number): string {
  const mib = 1024 * 1024;
  return n % mib === 0 ? `${n / mib} MiB` : `${n} bytes`;
}

/**
 * The text for `RowError.raw`: at most RAW_LIMIT characters (never splitting a surrogate pair),
 * NUL shown as U+FFFD, and copied so it does not keep a whole input chunk alive.
 */
export function rawText(s: string): string {
  if (s.length > RAW_LIMIT) {
    const cut = s.charCodeAt(RAW_LIMIT - 1);
    s = s.slice(0, cut >= 0xd800 && cut <= 0xdbff ? RAW_LIMIT - 1 : RAW_LIMIT);
  }
  if (s.includes('\0')) s = s.replaceAll('\0', '\uFFFD');
  return detach(s);
}

/** A flat copy of `s` (substrings of a large chunk string would otherwise pin the chunk). */
export function detach(s: string): string {
  return s.length < 13 ? s : Buffer.from(s, 'utf16le').toString('utf16le');
}

/**
 * Collects rows and errors and cuts them into batches of at most `batchRows` entries, or fewer once
 * their bytes reach `batchBytes`.
 */
export class BatchSink {
  rows: (string | null)[][] = [];
  lines: number[] = [];
  errors: RowError[] = [];
  /** Batches cut and not yet handed out. */
  readonly ready: RecordBatch[] = [];
  private cuts = 0;
  /** Bytes of the pending rows and errors (see addRow). */
  private bytes = 0;

  constructor(
    readonly batchRows: number,
    private header?: string[],
    readonly batchBytes: number = DEFAULT_BATCH_BYTES,
  ) {}

  setHeader(header: string[]): void {
    this.header = header;
  }

  /**
   * `textBytes`: the bytes of the row's text when the reader counted them (its fields' bytes in the
   * input); by default the length of its cells. A pointer per cell is added to it.
   */
  addRow(cells: (string | null)[], line: number, textBytes = textLength(cells)): void {
    this.rows.push(cells);
    this.lines.push(line);
    this.bytes += textBytes + CELL_BYTES * cells.length;
    if (this.rows.length + this.errors.length >= this.batchRows || this.bytes >= this.batchBytes) this.cut();
  }

  addError(line: number, reason: string, raw: string): void {
    const error = { line, reason, raw: rawText(raw) };
    this.errors.push(error);
    this.bytes += error.raw.length + error.reason.length;
    if (this.rows.length + this.errors.length >= this.batchRows || this.bytes >= this.batchBytes) this.cut();
  }

  /** Moves the pending rows and errors into a batch (the first batch carries the header). */
  cut(): void {
    const batch: RecordBatch = { rows: this.rows, lines: this.lines, errors: this.errors };
    if (this.cuts === 0 && this.header !== undefined) batch.header = this.header;
    this.cuts++;
    this.ready.push(batch);
    this.rows = [];
    this.lines = [];
    this.errors = [];
    this.bytes = 0;
  }

  /** At end of input: cuts what is pending, or an empty batch when nothing was cut yet. */
  finish(emptyBatchIfNone: boolean): void {
    if (this.rows.length > 0 || this.errors.length > 0 || (this.cuts === 0 && emptyBatchIfNone)) this.cut();
  }

  take(): RecordBatch | undefined {
    return this.ready.shift();
  }
}

/** The characters of a row's cells. */
function textLength(cells: readonly (string | null)[]): number {
  let n = 0;
  for (let i = 0; i < cells.length; i++) n += cells[i]?.length ?? 0;
  return n;
}

/** Validates a positive integer option, falling back to `fallback` when absent. */
export function positiveOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new FatalReadError(`the option ${name} must be a positive integer (got ${String(value)})`);
  }
  return value;
}
