/**
 * A job's staged-part buffers, used again once the destination has sent them. Each part of the
 * input is read into a buffer (4 MiB), transferred to the stage thread, and comes back, as the
 * memory of the clean CSV chunks the thread cut from it, to be written to COPY. Allocated afresh
 * per part, that memory cost page faults on every part and, as it came and went, garbage
 * collections of the worker's whole heap; a buffer COPY has sent now holds the next part instead.
 */
import type { CsvChunkPayload, Payload, PgBinaryPayload } from '@tapyard/destinations';

/** Free buffers kept per job: about the parts in flight (the thread's window, the batches queued). */
export const PART_BUFFERS_KEPT = 8;

export class PartBuffers {
  /** Free buffers by size: only sizes handed out as parts are kept. */
  private readonly free = new Map<number, ArrayBuffer[]>();
  private kept = 0;

  constructor(private readonly keep = PART_BUFFERS_KEPT) {}

  /** Memory for a part of `length` bytes (a BodyMemory): a free buffer of that size, or a new one. */
  readonly memory = (length: number): Buffer => {
    const list = this.free.get(length);
    const reused = list?.pop();
    if (list === undefined) this.free.set(length, []);
    if (reused === undefined) return Buffer.allocUnsafeSlow(length);
    this.kept--;
    return Buffer.from(reused);
  };

  /**
   * A batch from the stage thread: its CSV chunks are given a `written` hook, and a buffer of part
   * size is free again once every chunk that views it was written. The thread transfers a buffer in
   * one batch only (it is detached there after), so the batch holds every view of it. A batch with
   * any other payload than CSV chunks and COPY text (one that could view a buffer without saying when
   * it is done) frees nothing.
   */
  track(payloads: Payload[][]): void {
    const chunks: CsvChunkPayload[] = [];
    for (const list of payloads) {
      for (const p of list) {
        if (typeof p === 'string') continue;
        if (isBinary(p)) {
          const back = this.onBinaryWritten;
          if (back !== null) p.written = once(() => back(p.bytes.buffer as ArrayBuffer));
          continue;
        }
        if (!isCsvChunk(p)) return;
        chunks.push(p);
      }
    }
    const views = new Map<ArrayBuffer, number>();
    for (const c of chunks) {
      const b = c.bytes.buffer;
      if (b instanceof ArrayBuffer && this.free.has(b.byteLength)) views.set(b, (views.get(b) ?? 0) + 1);
    }
    for (const c of chunks) {
      const b = c.bytes.buffer as ArrayBuffer;
      if (!views.has(b)) continue;
      let done = false;
      c.written = () => {
        if (done) return;
        done = true;
        const left = (views.get(b) as number) - 1;
        views.set(b, left);
        if (left === 0) this.give(b);
      };
    }
  }

  /**
   * Where a binary COPY piece's memory goes once its loader has sent it: back to the stage thread,
   * whose encoder writes the next pieces there (null: left to the garbage collector).
   */
  onBinaryWritten: ((b: ArrayBuffer) => void) | null = null;

  /** Part buffers the stage thread is done with (the binary encoder read their rows): free again. */
  reuse(spent: ArrayBuffer[] | undefined): void {
    for (const b of spent ?? []) if (this.free.has(b.byteLength)) this.give(b);
  }

  private give(b: ArrayBuffer): void {
    if (this.kept >= this.keep) return;
    this.free.get(b.byteLength)?.push(b);
    this.kept++;
  }
}

function isBinary(p: Exclude<Payload, string>): p is PgBinaryPayload {
  return !(p instanceof Uint8Array) && 'kind' in p && p.kind === 'pg-binary';
}

function once(f: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    f();
  };
}

function isCsvChunk(p: Exclude<Payload, string>): p is CsvChunkPayload {
  return !(p instanceof Uint8Array) && 'kind' in p && p.kind === 'csv';
}
