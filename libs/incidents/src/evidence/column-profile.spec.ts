import { inferredTypeOf, profileColumns } from './column-profile';

describe('inferredTypeOf', () => {
  it('folds numeric types into number and keeps the rest', () => {
    expect(['int', 'bigint', 'float', 'double', 'decimal'].map(inferredTypeOf)).toEqual(
      Array(5).fill('number'),
    );
    expect(['string', 'boolean', 'date', 'timestamp', 'json'].map(inferredTypeOf)).toEqual([
      'string',
      'boolean',
      'date',
      'timestamp',
      'json',
    ]);
  });
});

describe('profileColumns', () => {
  const notSensitive = () => false;

  it('counts nulls (missing keys included) and distinct values exactly', () => {
    const rows = [
      { id: 1, name: 'a', active: true },
      { id: 2, name: 'b', active: null },
      { id: null, name: 'a' },
      { id: 2, name: null },
    ];
    const columns = [
      { name: 'id', type: 'int' },
      { name: 'name', type: 'string' },
      { name: 'active', type: 'boolean' },
    ];
    const [id, name, active] = profileColumns(rows, columns, notSensitive);
    expect(id).toEqual({
      name: 'id',
      inferredType: 'number',
      nullRate: 0.25,
      distinct: 2,
      quantiles: { p1: 1.02, p25: 1.5, p50: 2, p75: 2, p99: 2 },
    });
    expect(name).toEqual({
      name: 'name',
      inferredType: 'string',
      nullRate: 0.25,
      distinct: 2,
      lengthQuantiles: { p1: 1, p25: 1, p50: 1, p75: 1, p99: 1 },
      topK: [
        { value: 'a', count: 2 },
        { value: 'b', count: 1 },
      ],
    });
    expect(active).toEqual({
      name: 'active',
      inferredType: 'boolean',
      nullRate: 0.75,
      distinct: 1,
      topK: [{ value: 'true', count: 1 }],
    });
  });

  it('reports quantiles without binary noise', () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ n: i + 1 }));
    const [n] = profileColumns(rows, [{ name: 'n', type: 'double' }], notSensitive);
    expect(n.quantiles).toEqual({ p1: 1.09, p25: 3.25, p50: 5.5, p75: 7.75, p99: 9.91 });
  });

  it('withholds values of sensitive columns but keeps their shape', () => {
    const rows = [
      { email: 'ann@example.com', salary: 100, vip: true },
      { email: 'bo@example.com', salary: 200, vip: false },
      { email: null, salary: 200, vip: true },
    ];
    const columns = [
      { name: 'email', type: 'string' },
      { name: 'salary', type: 'bigint' },
      { name: 'vip', type: 'boolean' },
    ];
    const [email, salary, vip] = profileColumns(rows, columns, () => true);
    expect(email).toEqual({
      name: 'email',
      inferredType: 'string',
      nullRate: 1 / 3,
      distinct: 2,
      lengthQuantiles: { p1: 14.01, p25: 14.25, p50: 14.5, p75: 14.75, p99: 14.99 },
    });
    expect(salary).toEqual({ name: 'salary', inferredType: 'number', nullRate: 0, distinct: 2 });
    expect(vip).toEqual({ name: 'vip', inferredType: 'boolean', nullRate: 0, distinct: 2 });
    expect(JSON.stringify([email, salary, vip])).not.toMatch(/example|100|200|true/);
  });

  it('keeps the 5 most frequent values, ties by value ascending', () => {
    const values = ['b', 'b', 'a', 'a', 'c', 'c', 'c', 'f', 'e', 'd', 'B'];
    const [column] = profileColumns(
      values.map((v) => ({ v })),
      [{ name: 'v', type: 'string' }],
      notSensitive,
    );
    expect(column.topK).toEqual([
      { value: 'c', count: 3 },
      { value: 'a', count: 2 },
      { value: 'b', count: 2 },
      { value: 'B', count: 1 },
      { value: 'd', count: 1 },
    ]);
  });

  it('cuts long values to 100 code points and measures length in code points', () => {
    const emoji = '😀'.repeat(120);
    const [column] = profileColumns([{ s: emoji }], [{ name: 's', type: 'string' }], notSensitive);
    expect(column.topK).toEqual([{ value: '😀'.repeat(100), count: 1 }]);
    expect(column.lengthQuantiles?.p50).toBe(120);
  });

  it('profiles bigint digit strings and bigint values as numbers', () => {
    const rows = [{ n: '10' }, { n: '30' }, { n: 20n }, { n: null }, { n: 'n/a' }];
    const [n] = profileColumns(rows, [{ name: 'n', type: 'bigint' }], notSensitive);
    expect(n.inferredType).toBe('number');
    expect(n.nullRate).toBe(0.2);
    expect(n.distinct).toBe(4);
    expect(n.quantiles).toEqual({ p1: 10.2, p25: 15, p50: 20, p75: 25, p99: 29.8 });
    expect(n.topK).toBeUndefined();
  });

  it('gives dates and timestamps top values but no quantiles', () => {
    const rows = [{ at: new Date('2024-01-02T03:04:05Z') }, { at: new Date('2024-01-02T03:04:05Z') }];
    const [at] = profileColumns(rows, [{ name: 'at', type: 'timestamp' }], notSensitive);
    expect(at).toEqual({
      name: 'at',
      inferredType: 'timestamp',
      nullRate: 0,
      distinct: 1,
      topK: [{ value: '2024-01-02T03:04:05.000Z', count: 2 }],
    });
  });

  it('gives other declared types only null rate and distinct, counted by JSON text', () => {
    const rows = [{ j: { a: 1 } }, { j: { a: 1 } }, { j: [1] }, { j: '{"a":1}' }];
    const [j] = profileColumns(rows, [{ name: 'j', type: 'json' }], notSensitive);
    expect(j).toEqual({ name: 'j', inferredType: 'json', nullRate: 0, distinct: 3 });
  });

  it('shows non-text values of a string column as text', () => {
    const rows = [{ s: { a: 1 } }, { s: 7 }];
    const [s] = profileColumns(rows, [{ name: 's', type: 'string' }], notSensitive);
    expect(s.topK).toEqual([
      { value: '7', count: 1 },
      { value: '{"a":1}', count: 1 },
    ]);
  });

  it('describes no rows as no nulls, no values, no quantiles', () => {
    const columns = [
      { name: 'n', type: 'float' },
      { name: 's', type: 'string' },
    ];
    expect(profileColumns([], columns, notSensitive)).toEqual([
      { name: 'n', inferredType: 'number', nullRate: 0, distinct: 0 },
      { name: 's', inferredType: 'string', nullRate: 0, distinct: 0, topK: [] },
    ]);
  });
});
