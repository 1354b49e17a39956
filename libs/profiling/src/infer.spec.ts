import { inferFieldType, inferSchema } from './infer';

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
    [['1', '2', '1.5'], 'float'],
    [['1.25', 'NULL', '', '2.5'], 'float'],
    [['12345678', '1.5'], 'double'],
    [['1234567', '1.5'], 'float'],
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
