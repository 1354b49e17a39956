import { queryObjects, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MessageChannel, MessagePort } from 'node:worker_threads';
import { FatalReadError, StreamEndedError } from '@tapyard/readers';
import { INPUT_WINDOW_BYTES, receiveInput, sendInput } from './input-channel';

const MiB = 1 << 20;

async function drain(it: AsyncIterable<Buffer>, each?: () => Promise<void>) {
  const got: Buffer[] = [];
  try {
    for await (const b of it) {
      got.push(b);
      if (each) await each();
    }
    return { bytes: Buffer.concat(got), error: null as Error | null };
  } catch (err) {
    return { bytes: Buffer.concat(got), error: err as Error };
  }
}

describe('a job input from the runner to its stage thread', () => {
  it('arrives whole and in order, and the sender never runs more than a window ahead', async () => {
    const { port1, port2 } = new MessageChannel();
    let pulled = 0;
    let received = 0;
    let furthestAhead = 0;
    async function* source() {
      for (let i = 0; i < 40; i++) {
        pulled += MiB;
        furthestAhead = Math.max(furthestAhead, pulled - received);
        yield Buffer.alloc(MiB, i);
      }
    }
    const sending = sendInput(source(), port1, new AbortController().signal);
    const out = await drain(receiveInput(port2), async () => {
      received += MiB;
      // A slow thread: the sender must wait for it.
      await new Promise((r) => setTimeout(r, 2));
    });
    await sending;
    expect(out.error).toBeNull();
    expect(out.bytes.length).toBe(40 * MiB);
    for (let i = 0; i < 40; i++) expect(out.bytes[i * MiB + 7]).toBe(i);
    expect(furthestAhead).toBeLessThanOrEqual(INPUT_WINDOW_BYTES + 2 * MiB);
  });

  it('copies a view of a larger buffer out instead of taking the whole buffer with it', async () => {
    const { port1, port2 } = new MessageChannel();
    const slab = Buffer.alloc(1000, 7);
    const view = slab.subarray(100, 110);
    const sending = sendInput(
      (async function* () {
        yield view;
      })(),
      port1,
      new AbortController().signal,
    );
    const out = await drain(receiveInput(port2));
    await sending;
    expect(out.bytes).toEqual(Buffer.alloc(10, 7));
    // Still the sender's: not transferred away.
    expect(slab.length).toBe(1000);
    expect(slab[500]).toBe(7);
  });

  it('counts a buffer the thread transferred on as taken: the sender goes on past a window', async () => {
    const { port1, port2 } = new MessageChannel();
    // Where the fast path sends a part's clean records: the part's buffer leaves the thread with them.
    const onward = new MessageChannel();
    async function* source() {
      for (let i = 0; i < 3 * (INPUT_WINDOW_BYTES / MiB); i++) yield Buffer.alloc(MiB, i);
    }
    const sending = sendInput(source(), port1, new AbortController().signal);
    let parts = 0;
    for await (const b of receiveInput(port2)) {
      onward.port1.postMessage(b, [b.buffer as ArrayBuffer]);
      expect(b.length).toBe(0);
      parts++;
    }
    await sending;
    expect(parts).toBe(3 * (INPUT_WINDOW_BYTES / MiB));
    onward.port1.close();
  });

  it("ends the thread's read as the writer ended it: superseded, aborted, or unreadable", async () => {
    const cases: [Error, (e: Error | null) => void][] = [
      [
        new StreamEndedError(true, 'moved to job 2'),
        (e) => expect(e).toMatchObject({ superseded: true, message: 'moved to job 2' }),
      ],
      [
        new StreamEndedError(false, 'upload refused'),
        (e) => expect(e).toMatchObject({ superseded: false, message: 'upload refused' }),
      ],
      [
        new Error('store down'),
        (e) => {
          expect(e).toBeInstanceOf(FatalReadError);
          expect(e).not.toBeInstanceOf(StreamEndedError);
          expect(e?.message).toBe('store down');
        },
      ],
    ];
    for (const [thrown, check] of cases) {
      const { port1, port2 } = new MessageChannel();
      async function* source() {
        yield Buffer.from('a,b\n');
        throw thrown;
      }
      const sending = sendInput(source(), port1, new AbortController().signal);
      const out = await drain(receiveInput(port2));
      await sending;
      expect(out.bytes.toString()).toBe('a,b\n');
      check(out.error);
    }
  });

  it('a runner that stops sending (the job ended) ends the read as a failure, never a clean end', async () => {
    const { port1, port2 } = new MessageChannel();
    const stop = new AbortController();
    async function* source() {
      yield Buffer.from('x');
      await new Promise(() => undefined); // a store that hangs
    }
    const sending = sendInput(source(), port1, stop.signal);
    const reading = drain(receiveInput(port2));
    await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    const out = await reading;
    expect(out.bytes.toString()).toBe('x');
    expect(out.error).toBeInstanceOf(FatalReadError);
    void sending;
  });

  it('reaches a thread that starts reading only after the runner sent everything and let go of its port', async () => {
    const { port1, port2 } = new MessageChannel();
    async function* source() {
      for (let i = 0; i < 5; i++) yield Buffer.from(`part ${i};`);
    }
    await sendInput(source(), port1, new AbortController().signal);
    const out = await drain(receiveInput(port2));
    expect(out.error).toBeNull();
    expect(out.bytes.toString()).toBe('part 0;part 1;part 2;part 3;part 4;');
  });

  it('leaves no port behind once a job is done: a worker runs jobs for days', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const ports = async () => {
      gc();
      return queryObjects(MessagePort, { format: 'count' });
    };
    const before = await ports();
    const JOBS = 100;
    for (let i = 0; i < JOBS; i++) {
      const { port1, port2 } = new MessageChannel();
      async function* source() {
        yield Buffer.from('id,name\n1,a\n');
      }
      const sending = sendInput(source(), port1, new AbortController().signal);
      const out = await drain(receiveInput(port2));
      await sending;
      expect(out.error).toBeNull();
    }
    // Closed ports go at a collection once their close has been handled: a few turns of the loop.
    let left = await ports();
    for (let turn = 0; turn < 20 && left - before >= JOBS / 10; turn++) {
      await new Promise((r) => setImmediate(r));
      left = await ports();
    }
    expect(left - before).toBeLessThan(JOBS / 10);
  });
});
