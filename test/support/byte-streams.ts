import { Readable } from 'node:stream';

/** The bytes of `data` as a stream of `size`-byte chunks: readers must not care where chunks end. */
export function chunked(data: string | Buffer, size: number): Readable {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const chunks: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) chunks.push(buf.subarray(i, i + size));
  return Readable.from(chunks);
}

/** Runs `work` and returns the error it throws, which must be an instance of `type`. */
export async function thrown<E extends Error>(
  work: () => Promise<unknown>,
  type: new (...args: never[]) => E,
): Promise<E> {
  try {
    await work();
  } catch (err) {
    expect(err).toBeInstanceOf(type);
    return err as E;
  }
  throw new Error(`expected a ${type.name}`);
}
