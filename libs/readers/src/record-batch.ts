/**
 * The common output of the streaming readers (CSV, JSON, XML): batches of records plus precise
 * per-row errors, and the one error that makes a whole file unusable.
 */

/** One record that could not be read; the rest of the file continues. */
export interface RowError {
  /** 1-based physical line where the record starts. */
  line: number;
  /** One clear sentence. */
  reason: string;
  /** The offending text, truncated to 1,000 characters (NUL characters shown as U+FFFD). */
  raw: string;
}

export interface RecordBatch {
  /**
   * CSV: the cells of each record, null for an unquoted null marker (`nullValues`); JSON and XML:
   * one cell holding the record as JSON text.
   */
  rows: (string | null)[][];
  /** Start line of each row, parallel to `rows`. */
  lines: number[];
  errors: RowError[];
  /** CSV with `header: true`: the column names, on the first yielded batch only. */
  header?: string[];
}

/** The whole file is unusable; the message names the problem. */
export class FatalReadError extends Error {
  constructor(
    message: string,
    readonly line?: number,
  ) {
    super(message);
    this.name = 'FatalReadError';
  }
}
