/**
 * A job's input, from the runner (main thread, which reads it from the object store) to its stage
 * thread, over a MessagePort of its own: each buffer is transferred, not copied, and the thread
 * acknowledges what it took, so at most INPUT_WINDOW_BYTES are on their way at any time. This
 * replaced a copy into a local spool file that the thread read back: a write and a read of every
 * byte, and a poll of the file for growth.
 */
import type { MessagePort } from 'node:worker_threads';
import { FatalReadError, StreamEndedError } from '@tapyard/readers';

export type InputMessage =
  | { kind: 'data'; bytes: ArrayBuffer }
  | { kind: 'end' }
  /** `ended`: the writer ended the stream (StreamEndedError); null: the input could not be read. */
  | { kind: 'failed'; ended: 'superseded' | 'aborted' | null; message: string };

/** The thread took this many bytes: more may come. */
export interface InputAck {
  taken: number;
}

/** Bytes sent and not yet taken by the thread, at most (a few staged parts). */
export const INPUT_WINDOW_BYTES = 16 << 20;

/**
 * Sends `source` into `port` until it ends (then `end`), fails (then `failed`, with the reason) or
 * `signal` aborts, and closes the port. Waits while the thread holds a full window.
 */
export async function sendInput(
  source: AsyncIterable<Buffer>,
  port: MessagePort,
  signal: AbortSignal,
): Promise<void> {
  let inFlight = 0;
  let gone = false;
  let wake: (() => void) | null = null;
  const onAck = (m: InputAck) => {
    inFlight -= m.taken;
    wake?.();
  };
  const onGone = () => {
    gone = true;
    wake?.();
  };
  // Stopped, even while the source hangs (a store that does not answer): the thread's read fails now.
  const onAbort = () => {
    port.close();
    onGone();
  };
  port.on('message', onAck);
  port.once('close', onGone);
  signal.addEventListener('abort', onAbort);
  const stopped = () => gone || signal.aborted;
  try {
    try {
      for await (const chunk of source) {
        if (stopped()) return;
        // A view of a larger (pooled) buffer would transfer, or clone, all of it: copy it out.
        const own =
          chunk.byteOffset === 0 && chunk.buffer.byteLength === chunk.length ? chunk : new Uint8Array(chunk);
        const bytes = own.buffer as ArrayBuffer;
        inFlight += bytes.byteLength;
        port.postMessage({ kind: 'data', bytes } satisfies InputMessage, [bytes]);
        while (inFlight >= INPUT_WINDOW_BYTES && !stopped()) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
        }
      }
      if (stopped()) return;
      port.postMessage({ kind: 'end' } satisfies InputMessage);
    } catch (err) {
      if (stopped()) return;
      const ended = err instanceof StreamEndedError ? (err.superseded ? 'superseded' : 'aborted') : null;
      const message = err instanceof Error ? err.message : String(err);
      port.postMessage({ kind: 'failed', ended, message } satisfies InputMessage);
    }
  } finally {
    port.off('message', onAck);
    port.off('close', onGone);
    signal.removeEventListener('abort', onAbort);
    // Closed in every case: what was posted before reaches the thread first (the close follows it in the
    // thread's queue). Left open after `end`, a port whose listeners are gone stops reading, never sees
    // the thread close its end, and stays in the process with the acknowledgements queued to it: one
    // port and its messages per job, for the life of the worker.
    port.close();
  }
}

/** The thread's side: the input's bytes as they come, ending or failing as the sender said. */
export async function* receiveInput(port: MessagePort): AsyncGenerator<Buffer> {
  const queue: InputMessage[] = [];
  let closed = false;
  let wake: (() => void) | null = null;
  port.on('message', (m: InputMessage) => {
    queue.push(m);
    wake?.();
  });
  port.once('close', () => {
    closed = true;
    wake?.();
  });
  try {
    for (;;) {
      const m = queue.shift();
      if (m === undefined) {
        if (closed) throw new FatalReadError('the job stopped reading its input');
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        continue;
      }
      if (m.kind === 'end') return;
      if (m.kind === 'failed') {
        throw m.ended === null
          ? new FatalReadError(m.message)
          : new StreamEndedError(m.ended === 'superseded', m.message);
      }
      // Counted before it is handed out: the reader may transfer the buffer on (detaching it).
      const taken = m.bytes.byteLength;
      yield Buffer.from(m.bytes);
      port.postMessage({ taken } satisfies InputAck);
    }
  } finally {
    port.close();
  }
}
