import fc from 'fast-check';
import type { Tokenizer } from '@tapyard/embeddings';
import { ChunkBoundary, chunkText } from './chunk-text';

/** Like BERT's basic tokenizer: words and single punctuation marks. */
const wordsAndPunctuation: Tokenizer = {
  count: (text) => text.match(/[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu)?.length ?? 0,
};
const words = (text: string): string[] => text.split(/\s+/).filter(Boolean);

describe('chunkText', () => {
  it('keeps a short text whole', () => {
    expect(
      chunkText('One sentence. Two.', wordsAndPunctuation, { size: 50, overlap: 5, boundary: 'paragraph' }),
    ).toEqual([{ index: 0, text: 'One sentence. Two.', tokens: 5 }]);
  });

  it('ends chunks on paragraphs when they fit, and keeps paragraph breaks inside a chunk', () => {
    const text = 'Alpha beta gamma.\n\nDelta epsilon.\n\nZeta eta theta iota kappa lambda.';
    const chunks = chunkText(text, wordsAndPunctuation, { size: 8, overlap: 0, boundary: 'paragraph' });
    expect(chunks.map((c) => c.text)).toEqual([
      'Alpha beta gamma.\n\nDelta epsilon.',
      'Zeta eta theta iota kappa lambda.',
    ]);
  });

  it('keeps a Markdown section together with the heading boundary', () => {
    const text = '# One\n\nShort a.\n\nShort b.\n# Two\n\nShort c.';
    const chunks = chunkText(text, wordsAndPunctuation, { size: 9, overlap: 0, boundary: 'heading' });
    expect(chunks.map((c) => c.text)).toEqual(['# One\n\nShort a.\n\nShort b.', '# Two\n\nShort c.']);
  });

  it('repeats the end of a chunk at the start of the next (whole sentences), within the overlap', () => {
    const text = 'S one one. S two two. S three three. S four four.';
    const chunks = chunkText(text, wordsAndPunctuation, { size: 8, overlap: 4, boundary: 'sentence' });
    expect(chunks.map((c) => c.text)).toEqual([
      'S one one. S two two.',
      'S two two. S three three.',
      'S three three. S four four.',
    ]);
  });

  it('cuts a 10 MB single line of prose into chunks of whole words, in linear time', () => {
    const sentence = 'the quick brown fox jumps over the lazy dog and keeps running ';
    const text = sentence.repeat(Math.ceil((10 * 1024 * 1024) / sentence.length));
    const chunks = chunkText(text, wordsAndPunctuation, { size: 256, overlap: 0, boundary: 'paragraph' });
    expect(chunks.length).toBeGreaterThan(1000);
    for (const c of chunks.slice(0, 50)) {
      expect(c.tokens).toBeLessThanOrEqual(256);
      for (const w of words(c.text)) expect(sentence).toContain(w);
    }
    expect(chunks.reduce((n, c) => n + c.tokens, 0)).toBe(wordsAndPunctuation.count(text));
  });

  it('cuts a word longer than a chunk (nothing else can hold it)', () => {
    const chunks = chunkText(
      'x'.repeat(5000),
      { count: (t) => Math.ceil(t.length / 10) },
      { size: 100, overlap: 10, boundary: 'sentence' },
    );
    expect(chunks.map((c) => c.text).join('')).toBe('x'.repeat(5000));
    for (const c of chunks) expect(c.tokens).toBeLessThanOrEqual(100);
  });

  it('loses no word, splits none, and keeps every chunk within size (property)', () => {
    const word = fc.stringMatching(/^[a-z]{1,12}[.,!?]?$/);
    const para = fc.array(word, { minLength: 1, maxLength: 40 }).map((ws) => ws.join(' '));
    const doc = fc
      .array(fc.tuple(fc.boolean(), para), { minLength: 1, maxLength: 12 })
      .map((ps) => ps.map(([h, p]) => (h ? `# ${p}` : p)).join('\n\n'));
    const boundary = fc.constantFrom<ChunkBoundary>('paragraph', 'sentence', 'heading');
    fc.assert(
      fc.property(
        doc,
        fc.integer({ min: 8, max: 60 }),
        fc.integer({ min: 0, max: 30 }),
        boundary,
        (text, size, overlap, b) => {
          const chunks = chunkText(text, wordsAndPunctuation, { size, overlap, boundary: b });
          const source = words(text);
          const seen: string[] = [];
          for (const c of chunks) {
            expect(c.tokens).toBeLessThanOrEqual(size);
            expect(c.tokens).toBe(wordsAndPunctuation.count(c.text));
            const cw = words(c.text);
            // The chunk is a run of the source's words: find where it starts, at or before what was covered.
            const at = findRun(source, cw, Math.max(0, seen.length - cw.length - overlap));
            expect(at).toBeGreaterThanOrEqual(0);
            expect(at).toBeLessThanOrEqual(seen.length);
            seen.length = 0;
            seen.push(...source.slice(0, at + cw.length));
          }
          expect(seen).toEqual(source);
        },
      ),
      { numRuns: 300 },
    );
  });
});

function findRun(haystack: string[], needle: string[], from: number): number {
  outer: for (let i = from; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
