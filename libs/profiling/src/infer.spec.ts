import { TypeNote, inferColumnType, inferFieldType, inferSchema } from './infer';

describe('inferFieldType', () => {
  it.each<[string[], string]>([
    [[], 'string'],
    [['', ' ', 'NULL', 'NA', '\\N'], 'string'],
    [['true', 'False', 'yes', 'NO', 't', 'f'], 'boolean'],
    [['0', '1', '1', '0'], 'int'],
    [['1', '-0', '2147483647'], 'int'],
    [['1', '2147483648'], 'bigint'],
    [['00501', '10001', '90210'], 'string'],
    [['1', '007'], 'string'],
    [['1', '2', '1.5'], 'double'],
    [['1.25', 'NULL', '', '2.5'], 'decimal'],
    [['12345678', '1.5'], 'double'],
    [['1234567', '1.5'], 'double'],
    [['12.50', '3.99', '100'], 'decimal'],
    [['0.1234', '2.5000'], 'decimal'],
    [['0.12345', '2.5'], 'double'],
    [['1.5e3', '2.25'], 'double'],
    [['0.1', '0.25', '0.5', '0.7'], 'double'],
    [['21.3', '22.45', '19.8'], 'double'],
    [['0.12', '0.5', '0.25', '0.75', '0.125'], 'decimal'],
    [['3000000000', '1.5'], 'double'],
    [['1.5', '2.718281828'], 'double'],
    [['1', '9999999999999999999999'], 'string'],
    [['2024-01-05', '2023-12-31'], 'date'],
    [['2024-01-05', '2023-02-30'], 'string'],
    [['2024-01-05', '2024-01-05T10:00:00Z'], 'timestamp'],
    [['2024-01-05T10:00:00Z'], 'timestamp'],
    [['1', '2024-01-05'], 'string'],
    [['true', '1'], 'string'],
    [['1', 'two'], 'string'],
    [['1.5', 'NaN'], 'string'],
  ])('%j → %s', (values, type) => {
    expect(inferFieldType(values)).toBe(type);
  });
});

describe('inferColumnType', () => {
  it('never proposes single-precision float', () => {
    for (const values of [['1.5'], ['0.1', '2.2'], ['3.4e38'], ['1', '2.5'], ['12.50', '1e5']])
      expect(inferFieldType(values)).not.toBe('float');
  });

  it('proposes decimal for fixed-scale columns, with room to grow, and says why', () => {
    expect(inferColumnType(['12.50', '1999.99', '0.05'])).toEqual({
      type: 'decimal',
      precision: 18,
      scale: 2,
      note: {
        reason:
          "Values are written with 2 places after the point (e.g. '12.50'): decimal keeps them exact, where a floating type would round sums.",
        outliers: 0,
        examples: [],
      },
    });
    expect(inferColumnType([`${'9'.repeat(20)}.125`])).toMatchObject({ precision: 38, scale: 3 });
    // One value with a third place among two-place money: decimal(18,3) keeps it, nothing is refused.
    const money = [...Array.from({ length: 99 }, (_, i) => `${i}.50`), '7.125'];
    expect(inferColumnType(money)).toMatchObject({ type: 'decimal', precision: 18, scale: 3 });
  });

  it('one bad value among many: the majority type, with the outliers counted', () => {
    const values = [...Array.from({ length: 99 }, (_, i) => String(i)), 'twelve'];
    const t = inferColumnType(values);
    expect(t.type).toBe('int');
    expect(t.note).toEqual<TypeNote>({
      reason:
        "1 of 100 sampled values are not numbers (e.g. 'twelve'): proposed int for the others; rows with such " +
        'values would be rejected at load, with the reason. Use string to keep them as text.',
      outliers: 1,
      examples: ['twelve'],
    });
    const dates = [...Array.from({ length: 30 }, () => '2024-01-05'), 'soon'];
    expect(inferColumnType(dates)).toMatchObject({ type: 'date', note: { outliers: 1 } });
  });

  it('too many outliers: string, and why', () => {
    const t = inferColumnType(['1', '2', '3', 'x', 'y']);
    expect(t.type).toBe('string');
    expect(t.note?.reason).toBe(
      "3 of 5 sampled values are numbers, but 2 (more than 5%) are not (e.g. 'x', 'y'): kept as string.",
    );
  });
});

describe('inferSchema', () => {
  const rows = [
    ['1', 'Ada', '2024-01-05', '00501'],
    ['2', 'Grace', '', '10001', 'extra'],
    ['3', 'Linus'],
  ];

  it('names and types every column, including those past the header', () => {
    expect(inferSchema(['ID', 'Name', 'Signed Up', 'Zip'], rows)).toEqual([
      { name: 'id', type: 'int' },
      { name: 'name', type: 'string' },
      { name: 'signed_up', type: 'date' },
      { name: 'zip', type: 'string' },
      { name: 'column_5', type: 'string' },
    ]);
  });

  it('types everything as string when asked', () => {
    const schema = inferSchema(['ID', 'Name'], rows, { allStrings: true });
    expect(schema.map((f) => f.type)).toEqual(['string', 'string', 'string', 'string', 'string']);
    expect(schema.map((f) => f.name)).toEqual(['id', 'name', 'column_3', 'column_4', 'column_5']);
  });

  it('works without a header', () => {
    expect(inferSchema([], [['1', 'x']])).toEqual([
      { name: 'column_1', type: 'int' },
      { name: 'column_2', type: 'string' },
    ]);
  });
});
