import type { JsonRowsPayload } from '../destination';
import { jsonRowRun } from '../sinks/json-rows';

/** Rows `from` to `to` (exclusive) of one payload: a request's rows may come from several. */
export interface RowRun {
  payload: JsonRowsPayload;
  from: number;
  to: number;
}

const COMMA = 0x2c;
const LF = 0x0a;

/**
 * A request's body, copied once from the payloads' bytes: a JSON array of the rows, or (ndjson)
 * one row per line, the stored commas between rows turned into line breaks.
 */
export function restBody(all: RowRun[], format: 'json' | 'ndjson'): Buffer {
  // A run without rows would add a separator and nothing else (`[a,]`).
  const runs = all.filter((r) => r.to > r.from);
  const parts = runs.map((r) => jsonRowRun(r.payload, r.from, r.to));
  const size = parts.reduce((n, b) => n + b.length, 0);
  if (format === 'json') {
    // Brackets and the commas between runs: `[]` when there is none.
    const body = Buffer.allocUnsafe(size + Math.max(runs.length - 1, 0) + 2);
    let at = 0;
    body[at++] = 0x5b; // [
    parts.forEach((b, i) => {
      if (i > 0) body[at++] = COMMA;
      at += b.copy(body, at);
    });
    body[at] = 0x5d; // ]
    return body;
  }
  const body = Buffer.allocUnsafe(size + runs.length);
  let at = 0;
  runs.forEach((run, i) => {
    const start = run.from === 0 ? 0 : run.payload.ends[run.from - 1] + 1;
    parts[i].copy(body, at);
    // Each comma after a row of the run becomes its line break.
    for (let r = run.from; r < run.to - 1; r++) body[at + run.payload.ends[r] - start] = LF;
    at += parts[i].length;
    body[at++] = LF;
  });
  return body;
}
