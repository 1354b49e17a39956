import { Payload } from '../destination';
import { ONE_MESSAGE_BYTES, takeSmall } from './one-message';

/** A source of payloads that records whether it was stopped before its end. */
function source(payloads: Payload[]): { iterable: AsyncIterable<Payload>; stopped: () => boolean } {
  let stopped = false;
  const iterable = {
    [Symbol.asyncIterator]() {
      let i = 0;
      return {
        next: async () =>
          i < payloads.length
            ? { done: false as const, value: payloads[i++] }
            : { done: true as const, value: undefined },
        return: async () => {
          stopped = true;
          return { done: true as const, value: undefined };
        },
      };
    },
  };
  return { iterable, stopped: () => stopped };
}

async function all(payloads: AsyncIterable<Payload>): Promise<Payload[]> {
  const out: Payload[] = [];
  for await (const p of payloads) out.push(p);
  return out;
}

const csv = (bytes: number, eol: 'lf' | 'crlf' = 'lf'): Payload => ({
  kind: 'csv',
  bytes: new Uint8Array(bytes),
  rows: 1,
  line: 2,
  eol,
  copyOptions: 'FORMAT csv',
  columns: ['a'],
});

describe('takeSmall', () => {
  it('takes every payload of a load that fits one message, in order', async () => {
    const payloads = ['1\tx\n', '2\ty\n'];
    const taken = await takeSmall(source(payloads).iterable);
    expect(taken.whole).toEqual(payloads);
    expect(await all(taken.payloads)).toEqual(payloads);
  });

  it('streams a load past the bound, or of two COPY statements, with nothing lost or reordered', async () => {
    const large = [csv(ONE_MESSAGE_BYTES - 10), csv(100), csv(5)];
    const big = await takeSmall(source(large).iterable);
    expect(big.whole).toBeNull();
    expect(await all(big.payloads)).toEqual(large);
    // Line endings differ: PostgreSQL takes one per COPY.
    const mixed = [csv(10), csv(10, 'crlf'), csv(10)];
    const two = await takeSmall(source(mixed).iterable);
    expect(two.whole).toBeNull();
    expect(await all(two.payloads)).toEqual(mixed);
  });

  it('stops its source when the consumer stops early', async () => {
    const s = source([csv(ONE_MESSAGE_BYTES), csv(1), csv(1)]);
    const taken = await takeSmall(s.iterable);
    for await (const p of taken.payloads) {
      expect(p).toBeDefined();
      break;
    }
    expect(s.stopped()).toBe(true);
  });
});
