import type { CsvAttributes } from '@tapyard/model';
import { FatalReadError } from './record-batch';

const LF = 10;
const CR = 13;

function singleChar(name: string, value: string, latin1: boolean): number {
  const code = value.length === 1 ? value.charCodeAt(0) : -1;
  if (code < 0 || code >= (latin1 ? 0x100 : 0x80) || code === LF || code === CR) {
    throw new FatalReadError(
      `the CSV ${name} must be a single ${latin1 ? 'latin1' : 'ASCII'} character other than a line break (got ${JSON.stringify(value)})`,
    );
  }
  return code;
}

/**
 * The CSV special characters, checked once for every reader of the grammar (the reference reader, the
 * fast path's cutter and its check): single ASCII (latin1 in latin1 mode) characters, no line break.
 */
export function csvChars(
  opts: Pick<CsvAttributes, 'delimiter' | 'quote' | 'escape'> & {
    encoding?: CsvAttributes['encoding'];
  },
): { delim: number; quote: number; esc: number } {
  const latin1 = opts.encoding === 'latin1';
  const delim = singleChar('delimiter', opts.delimiter ?? ',', latin1);
  const quote = opts.quote === null ? -1 : singleChar('quote', opts.quote ?? '"', latin1);
  const rawEsc =
    opts.escape === null || opts.escape === undefined ? -1 : singleChar('escape', opts.escape, latin1);
  // As the reference: an escape equal to the quote (or without quoting) is no separate escape.
  const esc = rawEsc === quote || quote < 0 ? -1 : rawEsc;
  if (delim === quote || delim === esc) {
    throw new FatalReadError('the CSV delimiter must differ from the quote and the escape character');
  }
  return { delim, quote, esc };
}

/**
 * Where the quoted field opened at `open` of a clean chunk (one the fast path's byte check passed, so
 * the field is closed) ends: the index of its closing quote, times two, plus one when the field holds
 * escapes to undo (a doubled quote without an escape character; the escape before the quote or itself).
 * The fast path's encoders read fields with it (`quote`, `esc`: as csvChars gives them).
 */
export function quotedFieldEnd(b: Uint8Array, open: number, quote: number, esc: number): number {
  let p = open + 1;
  let escapes = 0;
  // Bounded by the buffer all the same: a chunk that broke the promise ends at its end, not in a loop.
  for (const n = b.length; p < n;) {
    const c = b[p];
    if (c === quote) {
      if (esc < 0 && b[p + 1] === quote) {
        escapes = 1;
        p += 2;
        continue;
      }
      return p * 2 + escapes;
    }
    if (c === esc) {
      const after = b[p + 1];
      if (after === quote || after === esc) {
        escapes = 1;
        p += 2;
        continue;
      }
    }
    p++;
  }
  return p * 2;
}
