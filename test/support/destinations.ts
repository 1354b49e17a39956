import { Destination, EncoderFactory, LoadTarget, Payload, encoderModule } from '@tapyard/destinations';
import { Value } from '@tapyard/model';

/** Rows (one array of typed values per row) as the destination's own encoder turns them into a payload. */
export function encodeRows(dest: Destination, target: LoadTarget, rows: Value[][]): Payload {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createEncoder } = require(encoderModule(dest.encoder)) as { createEncoder: EncoderFactory };
  return createEncoder(target.columns)({
    columns: target.columns,
    values: target.columns.map((_, c) => rows.map((r) => r[c])),
    lines: rows.map((_, i) => i + 2),
  });
}

/**
 * The exactly-once contract every destination declares: loading the same job (pipeline token) twice
 * writes it once; the second delivery reports `alreadyLoaded`, and `committed` says so beforehand.
 */
export async function expectSecondDeliveryWritesNothing(
  dest: Destination,
  target: LoadTarget,
  rows: Value[][],
): Promise<void> {
  const payloads = async function* () {
    yield encodeRows(dest, target, rows);
  };
  const none = async function* () {};
  await dest.prepare(target);
  expect(await dest.committed(target)).toBeNull();
  expect(await dest.load(target, payloads(), none, () => undefined)).toMatchObject({
    loaded: rows.length,
    alreadyLoaded: false,
  });
  expect(await dest.committed(target)).toMatchObject({ loaded: rows.length, alreadyLoaded: true });
  expect(await dest.load(target, payloads(), none, () => undefined)).toMatchObject({
    loaded: rows.length,
    alreadyLoaded: true,
  });
}
