import { EMAIL_PATTERN } from './patterns';
import { profileColumns } from './profile';
import { QualityIssue, QualityIssueKind } from './profile.types';

const range = (n: number): string[] => Array.from({ length: n }, (_, i) => String(i + 1));
const column = (values: string[]): string[][] => values.map((value) => [value]);

function issuesOf(header: string[], rows: string[][], kind: QualityIssueKind): QualityIssue[] {
  return profileColumns(header, rows).issues.filter((issue) => issue.kind === kind);
}

describe('profileColumns: statistics', () => {
  it('computes quantiles, mean and stddev of a known list', () => {
    const [v] = profileColumns(['v'], column(['10', '9', '8', '7', '6', '5', '4', '3', '2', '1'])).columns;
    expect(v.inferredType).toBe('int');
    expect(v.quantiles).toEqual({ p1: 1.09, p25: 3.25, p50: 5.5, p75: 7.75, p99: 9.91 });
    expect(v.min).toBe(1);
    expect(v.max).toBe(10);
    expect(v.mean).toBe(5.5);
    expect(v.stddev).toBeCloseTo(Math.sqrt(8.25), 12);
    expect(v.lengthQuantiles).toEqual({ p1: 1, p25: 1, p50: 1, p75: 1, p99: 1.91 });
  });

  const header = ['N', 'Label', 'When', 'Big', 'Day'];
  const rows = [
    ['1.0', ' b', '2024-01-05T10:00:00+02:00', '9007199254740993', '2024-01-02'],
    ['1', 'a', '2024-01-05T09:30:00Z', '-5', '2024-01-01'],
    ['2.5', 'NULL', '2024-01-05', '3000000000', ''],
    ['', 'b'],
  ];
  const profile = profileColumns(header, rows, { topK: 3 });
  const byName = (name: string) => {
    const found = profile.columns.find((c) => c.name === name);
    if (!found) throw new Error(`no column ${name}`);
    return found;
  };

  it('counts rows, columns and nulls, with short rows reading as empty', () => {
    expect(profile.rowCount).toBe(4);
    expect(profile.columnCount).toBe(5);
    expect(byName('n')).toMatchObject({ sourceName: 'N', count: 3, nullCount: 1, nullRate: 0.25 });
    expect(byName('label')).toMatchObject({ count: 3, nullCount: 1 });
    expect(byName('day')).toMatchObject({ inferredType: 'date', nullCount: 2, nullRate: 0.5 });
  });

  it('counts distinct values as the loader will store them', () => {
    expect(byName('n')).toMatchObject({
      inferredType: 'double',
      distinctCount: 2,
      topValues: [
        { value: '1', count: 2 },
        { value: '2.5', count: 1 },
      ],
      min: 1,
      max: 2.5,
    });
    expect(byName('label')).toMatchObject({
      inferredType: 'string',
      distinctCount: 2,
      topValues: [
        { value: 'b', count: 2 },
        { value: 'a', count: 1 },
      ],
      min: 'a',
      max: 'b',
      quantiles: null,
    });
    expect(byName('label').mean).toBeUndefined();
  });

  it('orders timestamps by instant and dates by calendar', () => {
    expect(byName('when')).toMatchObject({
      inferredType: 'timestamp',
      min: '2024-01-05',
      max: '2024-01-05T09:30:00Z',
      quantiles: null,
    });
    expect(byName('day')).toMatchObject({ min: '2024-01-01', max: '2024-01-02' });
  });

  it('keeps bigint bounds exact', () => {
    expect(byName('big')).toMatchObject({ inferredType: 'bigint', min: -5, max: '9007199254740993' });
  });

  it('limits and orders top values by count, then value', () => {
    const [c] = profileColumns(['c'], column(['b', 'c', 'a', 'c', 'b', 'd']), { topK: 2 }).columns;
    expect(c.topValues).toEqual([
      { value: 'b', count: 2 },
      { value: 'c', count: 2 },
    ]);
  });

  it('describes an empty column without failing', () => {
    const [c] = profileColumns(['c'], column(['', 'NA'])).columns;
    expect(c).toMatchObject({ inferredType: 'string', count: 0, nullRate: 1, min: null, max: null });
    expect(c.lengthQuantiles).toEqual({ p1: 0, p25: 0, p50: 0, p75: 0, p99: 0 });
  });

  it('is deterministic, and row order does not change column statistics', () => {
    expect(profileColumns(header, rows)).toStrictEqual(profileColumns(header, rows));
    expect(profileColumns(header, [...rows].reverse()).columns).toStrictEqual(
      profileColumns(header, rows).columns,
    );
  });
});

describe('profileColumns: issues', () => {
  it('reports a mostly-numeric column with stray text', () => {
    const [issue] = issuesOf(['qty'], column([...range(19), 'n/a']), 'mixed_types');
    expect(issue).toMatchObject({ column: 'qty', severity: 'warning', count: 1 });
    expect(issue.message).toContain('mostly number (19 of 20 values)');
    expect(issue.message).toContain("1 text (e.g. 'n/a')");
  });

  it('does not call int+float or leading-zero codes mixed', () => {
    expect(issuesOf(['x'], column(['1', '2.5']), 'mixed_types')).toEqual([]);
    expect(issuesOf(['zip'], column(['00501', '10001']), 'mixed_types')).toEqual([]);
  });

  it('counts duplicate rows, padding short rows', () => {
    const rows = [
      ['1', 'a'],
      ['1', 'a', ''],
      ['2', 'b'],
      ['1', 'a'],
    ];
    expect(issuesOf(['n', 's', 't'], rows, 'duplicate_rows')).toEqual([
      expect.objectContaining({ column: null, count: 2, severity: 'warning' }),
    ]);
  });

  it('flags repeats in a key-like column only', () => {
    expect(issuesOf(['id'], column(['1', '2', '2', '3']), 'duplicate_values')).toEqual([
      expect.objectContaining({ column: 'id', count: 1 }),
    ]);
    expect(issuesOf(['city'], column(['Paris', 'Paris', 'Lyon']), 'duplicate_values')).toEqual([]);
    const nearlyUnique = [...range(24), '24'];
    expect(issuesOf(['code'], column(nearlyUnique), 'duplicate_values')).toEqual([
      expect.objectContaining({ column: 'code', count: 1 }),
    ]);
  });

  it('counts outliers beyond 3×IQR', () => {
    const [issue] = issuesOf(
      ['v'],
      column(['1', '2', '3', '4', '5', '6', '7', '8', '9', '1000']),
      'outliers',
    );
    expect(issue).toMatchObject({ column: 'v', count: 1, severity: 'info' });
    expect(issue.message).toContain('[-10.25, 21.25]');
    expect(issuesOf(['v'], column(range(10)), 'outliers')).toEqual([]);
  });

  it('reports blank and colliding header cells with the names they got', () => {
    const header = ['a', 'A', '', '???'];
    const rows = [['1', '2', '3', '4']];
    expect(issuesOf(header, rows, 'blank_header').map((i) => [i.column, i.message])).toEqual([
      ['column_3', "Column 3 has no header; it was named 'column_3'"],
      ['column_4', "Column 4 header '???' has no usable characters; it was named 'column_4'"],
    ]);
    expect(issuesOf(header, rows, 'duplicate_header')).toEqual([
      expect.objectContaining({
        column: 'a_2',
        message: "Header 'A' (column 2) is the same as 'a' once normalised; it was named 'a_2'",
      }),
    ]);
    expect(issuesOf([], rows, 'blank_header')).toEqual([]);
  });

  it('flags columns more than half empty', () => {
    expect(issuesOf(['c'], column(['x', '', '', '']), 'high_null_rate')).toEqual([
      expect.objectContaining({ column: 'c', count: 3 }),
    ]);
    expect(issuesOf(['c'], column(['x', 'y', '', '']), 'high_null_rate')).toEqual([]);
  });

  it('flags a constant column', () => {
    expect(issuesOf(['c'], column(['x', 'x', '', 'x']), 'constant_column')).toEqual([
      expect.objectContaining({ column: 'c', message: "Column 'c' has the single value 'x'" }),
    ]);
    expect(issuesOf(['c'], column(['x']), 'constant_column')).toEqual([]);
  });

  it('counts ragged rows; longer rows are an error', () => {
    expect(issuesOf(['a', 'b'], [['1', '2'], ['1'], ['1', '2', '3']], 'ragged_rows')).toEqual([
      expect.objectContaining({ count: 2, severity: 'error' }),
    ]);
    expect(issuesOf(['a', 'b'], [['1', '2'], ['1']], 'ragged_rows')).toEqual([
      expect.objectContaining({ count: 1, severity: 'warning' }),
    ]);
    expect(issuesOf([], [['1', '2'], ['3', '4'], ['5']], 'ragged_rows')).toEqual([
      expect.objectContaining({ count: 1 }),
    ]);
  });

  it('notes leading zeros and surrounding whitespace', () => {
    expect(issuesOf(['zip'], column(['00501', '10001']), 'leading_zeros')).toEqual([
      expect.objectContaining({ column: 'zip', count: 1, severity: 'info' }),
    ]);
    expect(issuesOf(['s'], column([' a', 'b ', 'c', '   ']), 'whitespace')).toEqual([
      expect.objectContaining({ column: 's', count: 2 }),
    ]);
  });
});

describe('profileColumns: recommendations and rules', () => {
  const header = ['ID', 'Email', 'Status', 'Score', 'Zip', 'Active', 'Note', 'Joined'];
  const rows = range(10).map((n, i) => [
    n,
    `user${n}@example.com`,
    i % 3 === 0 ? 'closed' : 'open',
    String((i % 4) + 0.5),
    String(1000 + i * 7).padStart(5, '0'),
    i % 2 === 0 ? 'yes' : 'no',
    i < 2 ? 'see above' : i === 2 ? 'call back' : '',
    `0${(i % 9) + 1}/03/2024`,
  ]);
  const profile = profileColumns(header, rows, { wholeFile: true });

  it('suggests rules the sample satisfies', () => {
    expect(profile.suggestedRules).toEqual([
      { type: 'not_null', column: 'id' },
      { type: 'unique', column: 'id' },
      { type: 'not_null', column: 'email' },
      { type: 'unique', column: 'email' },
      { type: 'regex', column: 'email', pattern: EMAIL_PATTERN },
      { type: 'not_null', column: 'status' },
      { type: 'allowed_values', column: 'status', values: ['closed', 'open'] },
      { type: 'not_null', column: 'score' },
      { type: 'range', column: 'score', min: 0.5, max: 3.5 },
      { type: 'not_null', column: 'zip' },
      { type: 'unique', column: 'zip' },
      { type: 'regex', column: 'zip', pattern: '^\\d{5}$' },
      { type: 'not_null', column: 'active' },
      { type: 'not_null', column: 'joined' },
      { type: 'regex', column: 'joined', pattern: '^\\d{2}/\\d{2}/\\d{4}$' },
    ]);
  });

  it('checks every suggested regex against the sample', () => {
    for (const rule of profile.suggestedRules) {
      if (rule.type !== 'regex') continue;
      const index = profile.columns.findIndex((c) => c.name === rule.column);
      expect(rows.every((row) => new RegExp(rule.pattern).test(row[index]))).toBe(true);
    }
  });

  it('gives actionable advice', () => {
    expect(profile.recommendations).toEqual([
      "Column 'zip' has leading zeros: keep it as string.",
      "Column 'note' is mostly empty: check the source, or keep it nullable.",
      "Column 'joined' holds dates in a regional format: convert them to YYYY-MM-DD to load them as dates.",
      "Column 'id' is unique and never null: a good key; consider a unique rule.",
    ]);
  });

  it('suggests nothing from a single row', () => {
    expect(profileColumns(['n'], [['1']], { wholeFile: true }).suggestedRules).toEqual([
      { type: 'range', column: 'n', min: 1, max: 1 },
    ]);
    expect(profileColumns(['id'], [['1']], { wholeFile: true }).suggestedRules).toEqual([]);
  });

  it('proposes ranges only from the whole file, never for id-like or monotonic columns', () => {
    // 200 rows of a longer file: `range 1..200` for the id would reject every later row.
    const rows200 = range(200).map((n, i) => [n, n, String(200 - i), String((i * 7) % 13)]);
    const head = ['ID', 'Seq', 'Countdown', 'Qty'];
    const ranged = (p: ReturnType<typeof profileColumns>) =>
      p.suggestedRules.filter((r) => r.type === 'range').map((r) => r.column);
    expect(ranged(profileColumns(head, rows200))).toEqual([]);
    expect(ranged(profileColumns(head, rows200, { wholeFile: true }))).toEqual(['qty']);
  });

  it('types a column by its majority and counts the outliers, saying why', () => {
    const cells = [...range(199), 'n/a?'];
    const p = profileColumns(['qty'], column(cells), { wholeFile: true });
    expect(p.columns[0]).toMatchObject({
      inferredType: 'int',
      count: 199,
      nullCount: 0,
      min: 1,
      max: 199,
      typeNote: { outliers: 1, examples: ['n/a?'] },
    });
    expect(p.columns[0].typeNote?.reason).toMatch(/^1 of 200 sampled values are not numbers/);
    expect(p.issues).toEqual([expect.objectContaining({ column: 'qty', kind: 'mixed_types', count: 1 })]);
  });

  it('proposes decimal with its precision and scale for money', () => {
    const p = profileColumns(['price'], column(['12.50', '3.05', '100', '7.5']));
    expect(p.columns[0]).toMatchObject({
      inferredType: 'decimal',
      precision: 18,
      scale: 2,
      distinctCount: 4,
      min: 3.05,
      max: 100,
    });
    expect(p.recommendations).toContain(
      "Column 'price' has a fixed number of places: load it as decimal(18,2), exact, not as float or double.",
    );
  });

  it('does not call a boolean column unique', () => {
    const rules = profileColumns(['flag'], column(['yes', 'no'])).suggestedRules;
    expect(rules).toEqual([{ type: 'not_null', column: 'flag' }]);
  });
});
