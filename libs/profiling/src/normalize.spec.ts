import { MAX_IDENTIFIER_LENGTH, normalizeColumnName, uniqueNames } from './normalize';

describe('normalizeColumnName', () => {
  it.each([
    ['Customer ID', 'customer_id'],
    ['  Order-Date.Local ', 'order_date_local'],
    ['growth%', 'growth_percent'],
    ['%done', 'percent_done'],
    ['a%b', 'a_percent_b'],
    ['Prénom', 'pr_nom'],
    ['名前', ''],
    ['__weird__  name__', 'weird_name'],
    ['2024 Sales', '2024_sales'],
    ['---', ''],
    ['', ''],
  ])('%j → %j', (raw, expected) => {
    expect(normalizeColumnName(raw)).toBe(expected);
  });
});

describe('uniqueNames', () => {
  it('makes names that collide after normalisation distinct', () => {
    expect(uniqueNames(['a', 'A', 'a%'])).toEqual(['a', 'a_2', 'a_percent']);
    expect(uniqueNames(['a', 'A', ' a '])).toEqual(['a', 'a_2', 'a_3']);
  });

  it('steps a generated suffix around a literal name, wherever that name appears', () => {
    expect(uniqueNames(['a', 'a', 'a_2'])).toEqual(['a', 'a_3', 'a_2']);
    expect(uniqueNames(['a_2', 'a', 'a'])).toEqual(['a_2', 'a', 'a_3']);
  });

  it('names blank headers by their 1-based position', () => {
    expect(uniqueNames(['', 'x', '  ', '???'])).toEqual(['column_1', 'x', 'column_3', 'column_4']);
  });

  it('keeps a generated name from colliding with a literal one', () => {
    const names = uniqueNames(['column_2', '']);
    expect(names).toEqual(['column_2', 'column_2_2']);
  });

  it('truncates to the Postgres limit and keeps the suffix', () => {
    const long = 'x'.repeat(80);
    const names = uniqueNames([long, long, long]);
    expect(names.map((n) => n.length)).toEqual([63, 63, 63]);
    expect(names[0]).toBe('x'.repeat(MAX_IDENTIFIER_LENGTH));
    expect(names[1]).toBe(`${'x'.repeat(61)}_2`);
    expect(names[2]).toBe(`${'x'.repeat(61)}_3`);
  });

  it('does not leave a double underscore where truncation meets the suffix', () => {
    const raw = `${'y'.repeat(60)} zzzz`;
    const names = uniqueNames([raw, raw]);
    expect(names[1]).toBe(`${'y'.repeat(60)}_2`);
  });

  it('is always collision-free and deterministic', () => {
    const header = ['A', 'a', 'a_2', '', 'column_4', 'a_3', 'a', '%', 'Percent'];
    const names = uniqueNames(header);
    expect(new Set(names).size).toBe(header.length);
    expect(uniqueNames(header)).toEqual(names);
    expect(names).toEqual([
      'a',
      'a_4',
      'a_2',
      'column_4',
      'column_4_2',
      'a_3',
      'a_5',
      'percent',
      'percent_2',
    ]);
  });
});
