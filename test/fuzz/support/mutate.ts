/** Corruptions of a valid input: the hostile and unlucky bytes readers meet. */
import fc from 'fast-check';

const CONTROL = [0x00, 0x01, 0x08, 0x0b, 0x0c, 0x1b, 0x7f];
const INVALID_UTF8 = [
  [0xff],
  [0xc3],
  [0xe2, 0x82],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xc0, 0xaf],
];

export type Mutation =
  | { kind: 'insert'; at: number; bytes: number[] }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'duplicate'; at: number; length: number };

/** A few mutations, positions as fractions of the input length. */
export function mutations(structural: string): fc.Arbitrary<Mutation[]> {
  const at = fc.double({ min: 0, max: 1, noNaN: true });
  const byte = fc.oneof(
    fc.constantFrom(...CONTROL).map((b) => [b]),
    fc.constantFrom(...INVALID_UTF8),
    fc.constantFrom(...[...structural].map((c) => [c.charCodeAt(0)])),
    fc.integer({ min: 0, max: 255 }).map((b) => [b]),
  );
  const one: fc.Arbitrary<Mutation> = fc.oneof(
    fc
      .record({ kind: fc.constant('insert' as const), at: at.map((x) => x), bytes: byte })
      .map((m) => m as Mutation),
    fc.record({ kind: fc.constant('delete' as const), at, length: fc.integer({ min: 1, max: 8 }) }),
    fc.record({ kind: fc.constant('truncate' as const), at }),
    fc.record({ kind: fc.constant('duplicate' as const), at, length: fc.integer({ min: 1, max: 16 }) }),
  ) as fc.Arbitrary<Mutation>;
  return fc.array(one, { minLength: 1, maxLength: 4 });
}

export function applyMutations(input: Buffer, ms: Mutation[]): Buffer {
  let b = input;
  for (const m of ms) {
    const at = Math.floor((m as { at: number }).at * b.length);
    switch (m.kind) {
      case 'insert':
        b = Buffer.concat([b.subarray(0, at), Buffer.from(m.bytes), b.subarray(at)]);
        break;
      case 'delete':
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.length)]);
        break;
      case 'truncate':
        b = b.subarray(0, at);
        break;
      case 'duplicate':
        b = Buffer.concat([b.subarray(0, at + m.length), b.subarray(at)]);
        break;
    }
  }
  return b;
}

/** Chunk sizes that cut inputs everywhere: single bytes, odd sizes, and the whole input. */
export const chunkSize = fc.constantFrom(1, 2, 3, 7, 64, 1 << 20);
