export interface ExtractLimits {
  /** Every entry counts, including directories and skipped ones. */
  maxEntries: number;
  /** Bytes actually written, summed over all extracted files. */
  maxTotalBytes: number;
  /** zip: per entry, against its compressed size; gz / tar.gz: whole stream, against the archive's size. */
  maxRatio: number;
  maxEntryBytes: number;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
/** Tiny entries legitimately expand far beyond any ratio (a few hundred zeros deflate to a handful of bytes). */
export const RATIO_SLACK = MiB;

export const DEFAULT_LIMITS: ExtractLimits = Object.freeze({
  maxEntries: 10_000,
  maxTotalBytes: 10 * GiB,
  maxRatio: 200,
  maxEntryBytes: 5 * GiB,
});

export function resolveLimits(given: Partial<ExtractLimits> | undefined): ExtractLimits {
  const limits: ExtractLimits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(DEFAULT_LIMITS) as (keyof ExtractLimits)[]) {
    const value = given?.[key];
    if (value === undefined) continue;
    // An undefined or NaN limit would silently disable the check, so reject it loudly.
    if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
      throw new RangeError(`extract limit ${key} must be a non-negative number`);
    }
    limits[key] = value;
  }
  return limits;
}

/** A limit as messages show it: the largest whole unit. */
export function size(bytes: number): string {
  for (const [unit, factor] of [
    ['GiB', GiB],
    ['MiB', MiB],
    ['KiB', KiB],
  ] as const) {
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor} ${unit}`;
  }
  return `${bytes} bytes`;
}
