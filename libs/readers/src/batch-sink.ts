/** Internals shared by the readers: defaults, RowError.raw, and cutting rows into batches. */
import { FatalReadError, RecordBatch, RowError } from './record-batch';

export const DEFAULT_BATCH_ROWS = 5_000;
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

/** Collects rows and errors and cuts them into batches of at most `batchRows` entries. */
export class BatchSink {
  rows: (string | null)[][] = [];
  lines: number[] = [];
  errors: RowError[] = [];
  /** Batches cut and not yet handed out. */
  readonly ready: RecordBatch[] = [];
  private cuts = 0;

  constructor(
    readonly batchRows: number,
    private header?: string[],
  ) {}

  setHeader(header: string[]): void {
    this.header = header;
  }

  addRow(cells: (string | null)[], line: number): void {
    this.rows.push(cells);
    this.lines.push(line);
    if (this.rows.length + this.errors.length >= this.batchRows) this.cut();
  }

  addError(line: number, reason: string, raw: string): void {
    this.errors.push({ line, reason, raw: rawText(raw) });
    if (this.rows.length + this.errors.length >= this.batchRows) this.cut();
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
  }

  /** At end of input: cuts what is pending, or an empty batch when nothing was cut yet. */
  finish(emptyBatchIfNone: boolean): void {
    if (this.rows.length > 0 || this.errors.length > 0 || (this.cuts === 0 && emptyBatchIfNone)) this.cut();
  }

  take(): RecordBatch | undefined {
    return this.ready.shift();
  }
}

/** Validates a positive integer option, falling back to `fallback` when absent. */
export function positiveOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new FatalReadError(`the option ${name} must be a positive integer (got ${String(value)})`);
  }
  return value;
}
