import type { JsonRowsPayload } from '../destination';
import { jsonRowRun } from '../sinks/json-rows';

/** Rows `from` to `to` (exclusive) of one payload: a request's rows may come from several. */
export interface RowRun {
  payload: JsonRowsPayload;
  from: number;
  to: number;
}

const LF = 0x0a;

const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');
const SEPARATOR = Buffer.from(',');

/**
 * A request's body as the chunks it is written in: a JSON array of the rows, views of the payloads'
 * bytes between its brackets and the commas between runs (not copied: a copy of each 20 KB body cost
 * the loader's thread more than the request's own writing, as fresh memory); or (ndjson) one row per
 * line, the stored commas between rows turned into line breaks in a copy.
 */
export function restBody(all: RowRun[], format: 'json' | 'ndjson'): Buffer[] {
  // A run without rows would add a separator and nothing else (`[a,]`).
  const runs = all.filter((r) => r.to > r.from);
  const parts = runs.map((r) => jsonRowRun(r.payload, r.from, r.to));
  if (format === 'json') {
    const chunks: Buffer[] = [OPEN];
    parts.forEach((b, i) => {
      if (i > 0) chunks.push(SEPARATOR);
      chunks.push(b);
    });
    chunks.push(CLOSE);
    return chunks;
  }
  const size = parts.reduce((n, b) => n + b.length, 0);
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
  return [body];
}
