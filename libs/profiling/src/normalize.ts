/**
 * Column-name normalisation: raw header cells become lowercase identifiers made of `[a-z0-9_]`,
 * unique within a table and no longer than Postgres allows.
 *
 * Choices:
 * - Accented and other non-ASCII letters become `_` rather than being transliterated: transliteration
 *   tables differ between libraries and versions, and the name must be stable across releases.
 * - `%` is spelled out as the word `percent` because "growth%" and "growth" are usually different
 *   measures and must not collide.
 * - A leading digit is kept (`2024_sales`): the loader quotes identifiers, so no prefix is needed.
 */

/** Postgres truncates longer identifiers silently, which could merge two columns. */
export const MAX_IDENTIFIER_LENGTH = 63;

export function normalizeColumnName(raw: string): string {
  return raw
    .toLowerCase()
    .replace(/%/g, '_percent_')
    .replace(/[^a-z0-9_]/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** Cuts to `maxLength` without leaving a trailing `_` that would double up with a suffix. */
function truncateName(name: string, maxLength: number): string {
  return name.length <= maxLength ? name : name.slice(0, maxLength).replace(/_+$/, '');
}

/** The normalised, length-limited name before de-duplication; '' when nothing usable remains. */
export function baseColumnName(raw: string): string {
  return truncateName(normalizeColumnName(raw), MAX_IDENTIFIER_LENGTH);
}

function withSuffix(base: string, n: number): string {
  const suffix = `_${n}`;
  return truncateName(base, MAX_IDENTIFIER_LENGTH - suffix.length) + suffix;
}

/**
 * Normalises every name and makes the list unique.
 *
 * Rule: a name that normalises to '' becomes `column_<position>` (1-based). The first column with a
 * given name keeps it; each later one takes the lowest `_<n>` (n ≥ 2) that is neither a name some
 * other column carries on its own (anywhere in the header, before or after) nor already handed out.
 * So `a, a, a_2` gives `a, a_3, a_2`: the literal `a_2` keeps its name and the generated one steps
 * around it. The result depends only on the input list.
 */
export function uniqueNames(raw: string[]): string[] {
  const bases = raw.map((name, i) => baseColumnName(name) || `column_${i + 1}`);
  const reserved = new Set(bases);
  const taken = new Set<string>();
  return bases.map((base) => {
    let name = base;
    for (let n = 2; taken.has(name) || (name !== base && reserved.has(name)); n++) {
      name = withSuffix(base, n);
    }
    taken.add(name);
    return name;
  });
}
