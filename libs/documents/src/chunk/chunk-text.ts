import type { Tokenizer } from '@tapyard/embeddings';

export const CHUNK_BOUNDARIES = ['paragraph', 'sentence', 'heading'] as const;
export type ChunkBoundary = (typeof CHUNK_BOUNDARIES)[number];

export interface ChunkingOptions {
  /** Most tokens (of the embedder's tokenizer) in a chunk. */
  size: number;
  /** Tokens at the end of one chunk repeated at the start of the next: whole sentences or words. */
  overlap: number;
  /**
   * Where a chunk prefers to end: `heading` before a Markdown heading (sections stay together where
   * they fit), `paragraph` at a blank line, `sentence` after a sentence. Where that cannot be had, at
   * the strongest boundary there is, down to a word.
   */
  boundary: ChunkBoundary;
}

export interface TextChunk {
  index: number;
  text: string;
  tokens: number;
}

/** How strong the boundary before a unit is: a cut there costs less the stronger it is. */
const enum Strength {
  Cut = -1,
  Word = 0,
  Sentence = 1,
  Paragraph = 2,
  Heading = 3,
}
const PREFERRED: Record<ChunkBoundary, Strength> = {
  heading: Strength.Heading,
  paragraph: Strength.Paragraph,
  sentence: Strength.Sentence,
};
const SEPARATOR: Record<Strength, string> = {
  [Strength.Cut]: '',
  [Strength.Word]: ' ',
  [Strength.Sentence]: ' ',
  [Strength.Paragraph]: '\n\n',
  [Strength.Heading]: '\n\n',
};

interface Unit {
  text: string;
  tokens: number;
  /** The boundary between this unit and the one before it. */
  before: Strength;
}

// Each pattern is linear: no nested quantifiers, lookbehind of at most four characters.
const BLOCK = /\n[ \t]*\n+|\n(?=#{1,6} )/;
const SENTENCE = /(?<=[.!?。！？]["'”’)\]]{0,3})\s+/u;
const WORD = /\s+/;

/**
 * Cuts text into chunks of at most `size` tokens. The text is read once into units (sentences; words
 * of a sentence longer than a chunk; pieces of a word longer than a chunk, which nothing else could
 * hold), each tokenized once; chunks are packed greedily and cut at the preferred boundary when one
 * lies in the chunk's last three quarters. Linear in the length of the text.
 */
export function chunkText(text: string, tokenizer: Tokenizer, options: ChunkingOptions): TextChunk[] {
  const size = Math.max(1, Math.floor(options.size));
  const overlap = Math.max(0, Math.min(Math.floor(options.overlap), Math.floor(size / 2)));
  const preferred = PREFERRED[options.boundary];
  const chunks: TextChunk[] = [];
  let cur: Unit[] = [];
  let tokens = 0;
  // Leading units of `cur` repeated from the last chunk: a chunk must hold more than these.
  let carried = 0;

  const cutAt = (limit: Unit | null): number => {
    let best = cur.length;
    let bestStrength = limit ? Math.min(limit.before, preferred) : preferred;
    let prefix = tokens;
    for (let i = cur.length - 1; i > carried; i--) {
      prefix -= cur[i].tokens;
      if (prefix < size / 4) break;
      const s = Math.min(cur[i].before, preferred);
      if (s > bestStrength) {
        best = i;
        bestStrength = s;
      }
    }
    return best;
  };

  const emit = (end: number): void => {
    const body = cur.slice(0, end);
    const t = body.reduce((n, u) => n + u.tokens, 0);
    chunks.push({ index: chunks.length, text: join(body), tokens: t });
    let keep = end;
    let kept = 0;
    while (keep > 1 && kept + body[keep - 1].tokens <= overlap && body[keep - 1].before !== Strength.Cut) {
      kept += body[--keep].tokens;
    }
    cur = [...body.slice(keep), ...cur.slice(end)];
    tokens = tokens - t + kept;
    carried = end - keep;
  };

  const add = (unit: Unit): void => {
    while (tokens + unit.tokens > size && cur.length > carried) emit(cutAt(unit));
    // Not even the overlap leaves room: give up as much of it as needed.
    while (tokens + unit.tokens > size && carried > 0) {
      tokens -= cur.shift()!.tokens;
      carried--;
    }
    cur.push(unit);
    tokens += unit.tokens;
  };

  units(text, tokenizer, size, add);
  while (cur.length > carried) emit(cur.length);
  return chunks;
}

function join(units: Unit[]): string {
  let out = '';
  for (let i = 0; i < units.length; i++) out += (i === 0 ? '' : SEPARATOR[units[i].before]) + units[i].text;
  return out;
}

/** Calls `add` with each unit of the text, in order. */
function units(text: string, tokenizer: Tokenizer, size: number, add: (u: Unit) => void): void {
  // Counting a piece far longer than a chunk is wasted work: it is split further anyway.
  const count = (s: string): number => (s.length > size * 64 ? Number.POSITIVE_INFINITY : tokenizer.count(s));
  let first = true;
  for (const raw of text.split(BLOCK)) {
    const block = raw.trim();
    if (!block) continue;
    let before = first ? Strength.Word : /^#{1,6} /.test(block) ? Strength.Heading : Strength.Paragraph;
    first = false;
    for (const s of block.split(SENTENCE)) {
      const sentence = s.trim();
      if (!sentence) continue;
      const t = count(sentence);
      if (t <= size) {
        add({ text: sentence, tokens: t, before });
        before = Strength.Sentence;
        continue;
      }
      for (const w of sentence.split(WORD)) {
        if (!w) continue;
        const wt = count(w);
        if (wt <= size) add({ text: w, tokens: wt, before });
        else cutWord(w, tokenizer, size, before, add);
        before = Strength.Word;
      }
      before = Strength.Sentence;
    }
  }
}

/** A "word" longer than a chunk (no white space at all): cut into pieces of at most `size` tokens. */
function cutWord(
  word: string,
  tokenizer: Tokenizer,
  size: number,
  before: Strength,
  add: (u: Unit) => void,
): void {
  let start = 0;
  while (start < word.length) {
    // A guess of four characters per token, shrunk until the piece fits.
    let len = Math.min(word.length - start, size * 4);
    let tokens = tokenizer.count(word.slice(start, start + len));
    while (tokens > size && len > 1) {
      len = Math.max(1, Math.floor((len * size) / tokens) - 1);
      tokens = tokenizer.count(word.slice(start, start + len));
    }
    add({ text: word.slice(start, start + len), tokens, before: start === 0 ? before : Strength.Cut });
    start += len;
  }
}
