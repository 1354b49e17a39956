import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { RejectedRow } from '@tapyard/destinations';
import { IngestPayload } from '@tapyard/queue';

export /** The input as it is handed to the stage thread, its bytes counted into `read`. */
async function* counted(source: AsyncIterable<Buffer>, read: { bytes: number }): AsyncGenerator<Buffer> {
  for await (const part of source) {
    read.bytes += part.length;
    yield part;
  }
}
/** The rejects of a job that has none. */
export async function* noRejects(): AsyncGenerator<RejectedRow> {}

export async function* readRejects(path: string): AsyncGenerator<RejectedRow> {
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  for await (const line of lines) if (line) yield JSON.parse(line) as RejectedRow;
}

/** Whether the job's input is complete when the job starts (nothing is still writing it). */
export function inputWhole(p: IngestPayload): boolean {
  return p.stream === undefined && p.records?.stream === undefined;
}

/**
 * The input a small upload carried in its job (IngestPayload.inline), in a buffer of its own to
 * transfer to the stage thread (a small Buffer may be a view of a shared pool).
 */
export function inlineInput(base64: string): ArrayBuffer {
  const bytes = Buffer.from(base64, 'base64');
  return new Uint8Array(bytes).buffer;
}
