import fc from 'fast-check';
import { fragmentMatcher } from './prompt-fragment';

/** Reference: a term occurs as a whole word when the characters around it are not letters, digits or _. */
function reference(text: string, term: string): boolean {
  const lower = text.toLowerCase();
  const t = term.toLowerCase();
  const word = (c: string | undefined): boolean => c !== undefined && /[\p{L}\p{N}_]/u.test(c);
  for (let i = lower.indexOf(t); i >= 0; i = lower.indexOf(t, i + 1)) {
    const before = [...lower.slice(0, i)].pop();
    const after = [...lower.slice(i + t.length)][0];
    if (!word(before) && !word(after)) return true;
  }
  return false;
}

describe('prompt fragment matching', () => {
  it('matches whole words case-insensitively, on the key or any alias', () => {
    const m = fragmentMatcher({ key: 'api', aliases: ['sales cloud', 'c++'] });
    expect(m.test('use the API key')).toBe(true);
    expect(m.test('rapid growth')).toBe(false);
    expect(m.test('apis')).toBe(false);
    expect(m.test('Sales  Cloud accounts')).toBe(true);
    expect(m.test('written in C++.')).toBe(true);
    expect(m.test('api_key')).toBe(false);
  });

  it('agrees with a reference implementation on random texts and terms (regex characters included)', () => {
    const unit = fc.constantFrom(
      'a',
      'B',
      'é',
      '1',
      '_',
      ' ',
      '.',
      '+',
      '*',
      '(',
      ')',
      '[',
      '\\',
      '$',
      '^',
      '|',
      '?',
      '-',
    );
    fc.assert(
      fc.property(
        fc.string({ unit, minLength: 1, maxLength: 4 }).filter((t) => t.trim() === t && !/\s/.test(t)),
        fc.string({ unit, maxLength: 6 }),
        fc.string({ unit, maxLength: 6 }),
        fc.boolean(),
        (term, before, after, upper) => {
          const text = `${before}${upper ? term.toUpperCase() : term}${after}`;
          expect(fragmentMatcher({ key: term, aliases: [] }).test(text)).toBe(reference(text, term));
        },
      ),
      { numRuns: 2000, seed: 7 },
    );
  });
});
