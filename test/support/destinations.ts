import { Destination, LoadTarget } from '@tapyard/destinations';

/**
 * The exactly-once contract every destination declares: loading the same job (pipeline token) twice
 * writes it once; the second delivery reports `alreadyLoaded`.
 */
export async function expectSecondDeliveryWritesNothing(
  dest: Destination,
  target: LoadTarget,
  copyText: string,
  rows: number,
): Promise<void> {
  const chunks = async function* () {
    yield copyText;
  };
  const none = async function* () {};
  await dest.prepare(target);
  expect(await dest.load(target, chunks(), none, () => undefined)).toMatchObject({
    loaded: rows,
    alreadyLoaded: false,
  });
  expect(await dest.load(target, chunks(), none, () => undefined)).toMatchObject({
    loaded: rows,
    alreadyLoaded: true,
  });
}
