/**
 * How many runs a property test makes. `npm test` makes `runs`, from a fixed seed, so the suite's
 * time and its cases are the same every time; `npm run fuzz` sets FUZZ_RUNS_SCALE and makes that
 * many times more from a random seed (fast-check prints the seed of a failure, to replay it).
 * A count, never a time limit: a time-boxed run is abandoned mid-case and goes on using shared
 * resources under the next test.
 */
import type { Parameters } from 'fast-check';

const SCALE = Number(process.env.FUZZ_RUNS_SCALE ?? 1);
if (!Number.isInteger(SCALE) || SCALE < 1) throw new Error('FUZZ_RUNS_SCALE must be a whole number ≥ 1');

export function propertyRuns<T>(runs: number, seed: number): Parameters<T> {
  return SCALE === 1 ? { numRuns: runs, seed } : { numRuns: runs * SCALE };
}

/** Jest timeout of a property test: `ms` in `npm test`, scaled with the runs under `npm run fuzz`. */
export function propertyTimeout(ms: number): number {
  return ms * SCALE;
}
