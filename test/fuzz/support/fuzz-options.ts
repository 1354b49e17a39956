/**
 * How long the fuzz properties run. `npm test` runs a seeded fuzz of a fixed number of runs per
 * property (counted, never time-boxed: a time box made the cases depend on the machine's speed and
 * left the interrupted run going on under the next test); `npm run fuzz` sets FUZZ_MS (time per
 * property) and random seeds, and keeps every input that breaks a property under
 * test/corpora/<reader>/ so the suites replay it from then on.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Parameters } from 'fast-check';

export const LONG_RUN = process.env.FUZZ_MS !== undefined;
const FUZZ_MS = Number(process.env.FUZZ_MS ?? 2500);

export function fuzzParameters<T>(runs: number): Parameters<T> {
  return LONG_RUN
    ? { numRuns: Number.MAX_SAFE_INTEGER, interruptAfterTimeLimit: FUZZ_MS, markInterruptAsFailure: false }
    : { numRuns: runs, seed: 18 };
}

/** Jest timeout of one fuzz test: the property's time plus generous slack for a loaded machine. */
export const FUZZ_TEST_TIMEOUT = FUZZ_MS * 4 + 120_000;

const CORPORA = join(__dirname, '..', '..', 'corpora');

/** The regression inputs of one reader, as `[name, bytes]`. */
export function corpus(reader: string): [string, Buffer][] {
  const dir = join(CORPORA, reader);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => !f.startsWith('.') && f !== 'README.md')
    .sort()
    .map((f) => [f, readFileSync(join(dir, f))]);
}

/** Keeps an input that broke a property (long runs only), named by its content hash. */
export function keep(reader: string, data: Uint8Array, ext: string): void {
  if (!LONG_RUN) return;
  const dir = join(CORPORA, reader);
  mkdirSync(dir, { recursive: true });
  const name = `found-${createHash('sha256').update(data).digest('hex').slice(0, 16)}.${ext}`;
  writeFileSync(join(dir, name), data);
}
