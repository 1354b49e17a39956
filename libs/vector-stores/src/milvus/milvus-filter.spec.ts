import fc from 'fast-check';
import { milvusFilter, milvusLiteral } from './milvus-filter';

describe('milvusFilter', () => {
  it('writes equality, any-of and conjunction over the metadata JSON field', () => {
    expect(milvusFilter(undefined)).toBe('');
    expect(milvusFilter({ colour: ['red', 'green'], year: 2025, public: false })).toBe(
      'metadata["colour"] in ["red", "green"] and metadata["year"] == 2025 and metadata["public"] == false',
    );
  });

  it('keeps any string inside its quotes: an unescaped quote never appears (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const lit = milvusLiteral(s);
        const body = lit.slice(1, -1);
        // Removing escape pairs leaves no quote and no backslash: nothing can close the literal early.
        // eslint-disable-next-line no-control-regex -- control characters must not survive unescaped
        expect(body.replace(/\\(["\\]|u[0-9a-f]{4})/g, '')).not.toMatch(/["\\\u0000-\u001f]/);
        expect(lit.startsWith('"') && lit.endsWith('"')).toBe(true);
      }),
    );
    expect(milvusLiteral('x" or 1 == 1 or "')).toBe('"x\\" or 1 == 1 or \\""');
  });

  it('refuses keys that are not metadata keys', () => {
    expect(() => milvusFilter({ 'a"] or true or metadata["b': 1 })).toThrow(/not a metadata key/);
  });
});
