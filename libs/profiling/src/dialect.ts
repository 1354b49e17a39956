/** The delimiters a CSV file is sniffed for, in the order a tie is settled. */
export const SNIFFED_DELIMITERS = [',', ';', '\t', '|'] as const;

/** Lines of the head the sniffing reads: enough to see a pattern, bounded whatever the file. */
const SNIFF_LINES = 50;

/**
 * The delimiter of a delimited text, from its head: the candidate found the same number of times
 * (outside quotes) on the most lines, at least once a line. A comma file whose values hold
 * semicolons, a semicolon file whose decimals use commas (`12,50`, European exports) and a tab file
 * are told apart by that regularity, not by which character is most frequent. `,` when nothing
 * stands out (a one-column file).
 */
export function sniffDelimiter(head: string): string {
  const lines = headLines(head);
  let best: { delimiter: string; share: number } = { delimiter: ',', share: 0 };
  for (const delimiter of SNIFFED_DELIMITERS) {
    const counts = lines.map((line) => countOutsideQuotes(line, delimiter));
    const usual = mode(counts.filter((n) => n > 0));
    if (usual === null) continue;
    const share = counts.filter((n) => n === usual).length / lines.length;
    if (share > best.share) best = { delimiter, share };
  }
  // Most lines must agree: a stray character in a few values is no delimiter.
  return best.share >= 0.8 ? best.delimiter : ',';
}

/** The first lines, a quoted field's line breaks kept inside its line; a cut-off last line dropped. */
function headLines(head: string): string[] {
  const lines: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < head.length && lines.length < SNIFF_LINES; i++) {
    const c = head[i];
    if (c === '"') quoted = !quoted;
    else if (c === '\n' && !quoted) {
      const line = head.slice(start, i).replace(/\r$/, '');
      if (line.trim() !== '') lines.push(line);
      start = i + 1;
    }
  }
  if (lines.length === 0 && head.trim() !== '') lines.push(head);
  return lines;
}

function countOutsideQuotes(line: string, delimiter: string): number {
  let n = 0;
  let quoted = false;
  for (const c of line) {
    if (c === '"') quoted = !quoted;
    else if (c === delimiter && !quoted) n++;
  }
  return n;
}

function mode(values: number[]): number | null {
  const tally = new Map<number, number>();
  for (const v of values) tally.set(v, (tally.get(v) ?? 0) + 1);
  let best: number | null = null;
  for (const [v, n] of tally) if (best === null || n > (tally.get(best) ?? 0)) best = v;
  return best;
}
