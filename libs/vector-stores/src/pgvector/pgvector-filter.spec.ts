import { pgvectorWhere } from './pgvector-filter';

describe('pgvectorWhere', () => {
  it('is true without conditions', () => {
    expect(pgvectorWhere(undefined, 3)).toEqual({ sql: 'true', params: [] });
    expect(pgvectorWhere({}, 3)).toEqual({ sql: 'true', params: [] });
  });

  it('compares JSON values, and writes each key as containment too, three parameters per key numbered from the first free one', () => {
    const w = pgvectorWhere({ colour: ['red', 'green'], year: 2025, public: false }, 3);
    expect(w.sql).toBe(
      'metadata @> ANY ($5::jsonb[]) AND metadata -> $3 = ANY ($4::jsonb[]) AND ' +
        'metadata @> ANY ($8::jsonb[]) AND metadata -> $6 = ANY ($7::jsonb[]) AND ' +
        'metadata @> ANY ($11::jsonb[]) AND metadata -> $9 = ANY ($10::jsonb[])',
    );
    expect(w.params).toEqual([
      'colour',
      ['"red"', '"green"'],
      ['{"colour":"red"}', '{"colour":"green"}'],
      'year',
      ['2025'],
      ['{"year":2025}'],
      'public',
      ['false'],
      ['{"public":false}'],
    ]);
  });

  it('never writes a key or value into the SQL text', () => {
    const hostile = `x'); DROP TABLE t; --`;
    const w = pgvectorWhere({ [hostile]: hostile }, 1);
    expect(w.sql).not.toContain('DROP');
    expect(w.params).toEqual([hostile, [JSON.stringify(hostile)], [JSON.stringify({ [hostile]: hostile })]]);
  });
});
