/**
 * The choice a near-miss meant: the same word in another case (`objectstore` → `objectStore`), or
 * the closest one within a few edits (a third of the word's length; a swap of two neighbours is one).
 * Null when nothing is close enough, so a wild value gets the list of choices and no guess.
 */
export function closestChoice(word: string, choices: readonly string[]): string | null {
  const lower = word.toLowerCase();
  const sameCase = choices.find((c) => c.toLowerCase() === lower);
  if (sameCase !== undefined) return sameCase;
  // Past this length a word is no typo of a name (and the distance below is quadratic).
  if (word.length > 64) return null;
  const budget = Math.floor(word.length / 3);
  let best: string | null = null;
  let bestDistance = budget + 1;
  for (const choice of choices) {
    const d = editDistance(lower, choice.toLowerCase());
    if (d < bestDistance) {
      best = choice;
      bestDistance = d;
    }
  }
  return best;
}

/** ` (did you mean 'x'?)`, or nothing: appended to a problem that names a wrong word. */
export function didYouMean(word: string, choices: readonly string[]): string {
  const guess = closestChoice(word, choices);
  return guess === null ? '' : ` (did you mean '${guess}'?)`;
}

/** Edit distance where swapping two neighbours counts one (optimal string alignment), three rows at a time. */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        current[j] = Math.min(current[j], before[j - 2] + 1);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length];
}
