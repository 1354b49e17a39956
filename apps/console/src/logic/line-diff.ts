/**
 * A line diff of two script versions (longest common subsequence): scripts are a few hundred lines at
 * most, so the quadratic table is small. Each line is kept, removed (only in `before`) or added.
 */
export interface DiffLine {
  kind: 'same' | 'removed' | 'added';
  text: string;
  /** Line number in `before` (same, removed) and in `after` (same, added). */
  before?: number;
  after?: number;
}

/** Past this many cells the table would be too large for a browser tab: the diff is whole-file. */
const MAX_CELLS = 4_000_000;

export function lineDiff(before: string, after: string): DiffLine[] {
  const a = splitLines(before);
  const b = splitLines(after);
  if ((a.length + 1) * (b.length + 1) > MAX_CELLS) {
    return [
      ...a.map((text, i): DiffLine => ({ kind: 'removed', text, before: i + 1 })),
      ...b.map((text, j): DiffLine => ({ kind: 'added', text, after: j + 1 })),
    ];
  }
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
  const lcs = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ kind: 'same', text: a[i], before: i + 1, after: j + 1 });
      i++;
      j++;
    } else if (j < b.length && (i === a.length || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out.push({ kind: 'added', text: b[j], after: j + 1 });
      j++;
    } else {
      out.push({ kind: 'removed', text: a[i], before: i + 1 });
      i++;
    }
  }
  return out;
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}
