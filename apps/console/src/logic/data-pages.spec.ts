import { toCsv } from './csv';
import { type Evidence, failedChecks, nullRateSeries, quantileSeries, topValueSeries } from './evidence-view';
import { containerField, filterOf, searchBody } from './search-form';
import { sseParser } from './sse';

describe('sseParser', () => {
  it('reads events split across chunks, skips keep-alive comments, parses JSON data', () => {
    const p = sseParser();
    expect(p.push('event: turn\ndata: {"turnId":"t1"}\n\nevent: te')).toEqual([
      { event: 'turn', data: { turnId: 't1' } },
    ]);
    expect(p.push('xt\r\ndata: {"delta":"Hel"}\r\n\r\n: keep-alive\n\n')).toEqual([
      { event: 'text', data: { delta: 'Hel' } },
    ]);
    expect(p.push('data: plain\n')).toEqual([]);
    expect(p.push('\n')).toEqual([{ event: 'message', data: 'plain' }]);
  });
});

describe('toCsv', () => {
  it('quotes what needs quoting, leaves NULL empty and defuses spreadsheet formulas, not numbers', () => {
    expect(
      toCsv(
        ['region', 'note', 'n'],
        [
          ['north', 'a, "b"', '-5'],
          ['south', null, '=HYPERLINK("x")'],
          ['east', 'two\nlines', { a: 1 }],
        ],
      ),
    ).toBe(
      'region,note,n\r\nnorth,"a, ""b""",-5\r\nsouth,,"\'=HYPERLINK(""x"")"\r\neast,"two\nlines","{""a"":1}"\r\n',
    );
  });
});

describe('search form', () => {
  it('names the container with the field of each store', () => {
    expect(containerField('pgvector').field).toBe('table');
    expect(containerField('weaviate').field).toBe('className');
    expect(containerField('qdrant').field).toBe('collection');
    expect(searchBody('pgvector', ' kb ', 'public', 'q', 5, undefined)).toEqual({
      query: 'q',
      topK: 5,
      table: 'kb',
      schema: 'public',
    });
    expect(searchBody('qdrant', 'kb', 'ignored', 'q', 3, { year: 2026 })).toEqual({
      query: 'q',
      topK: 3,
      collection: 'kb',
      filter: { year: 2026 },
    });
  });

  it('reads filter values as JSON when they are, text otherwise, and names a bad key', () => {
    expect(
      filterOf([
        { key: 'filename', value: 'leave.md' },
        { key: 'year', value: '[2025, 2026]' },
        { key: 'draft', value: 'false' },
        { key: '', value: '' },
      ]),
    ).toEqual({ filter: { filename: 'leave.md', year: [2025, 2026], draft: false } });
    expect(filterOf([])).toEqual({});
    expect(filterOf([{ key: 'a b', value: 'x' }]).problem).toContain('"a b"');
    expect(filterOf([{ key: 'k', value: '[{"a":1}]' }]).problem).toContain('Filter k');
  });
});

describe('evidence charts', () => {
  const q = (m: number) => ({ p1: m - 2, p25: m - 1, p50: m, p75: m + 1, p99: m + 2 });
  const evidence: Evidence = {
    verdict: 'fail',
    checks: [
      { name: 'candidate-runs', passed: true, observed: 'ran', limit: 'runs' },
      { name: 'record-delta', passed: false, observed: '-60%', limit: '±20%' },
    ],
    baseline: {
      source: 'landed-sample',
      recordCount: 10,
      dqPassRate: 0.9,
      columns: [
        { name: 'amount', inferredType: 'number', nullRate: 0, distinct: 10, quantiles: q(50) },
        { name: 'email', inferredType: 'string', nullRate: 0.1, distinct: 9 },
        {
          name: 'region',
          inferredType: 'string',
          nullRate: 0,
          distinct: 2,
          topK: [
            { value: 'north', count: 6 },
            { value: 'south', count: 4 },
          ],
        },
      ],
    },
    candidate: {
      source: 'landed-sample',
      recordCount: 4,
      dqPassRate: 0.4,
      columns: [
        { name: 'amount', inferredType: 'number', nullRate: 0.5, distinct: 4, quantiles: q(150) },
        {
          name: 'region',
          inferredType: 'string',
          nullRate: 0,
          distinct: 1,
          topK: [{ value: 'east', count: 4 }],
        },
      ],
    },
  };

  it('draws null rates of every column, a missing column as no value', () => {
    expect(nullRateSeries(evidence)).toEqual({
      title: 'Null rate per column',
      labels: ['amount', 'email', 'region'],
      baseline: [0, 0.1, 0],
      candidate: [0.5, null, 0],
    });
  });

  it('draws quantiles and top values only of the columns that have them (values hidden: no chart)', () => {
    expect(quantileSeries(evidence)).toEqual([
      {
        title: 'Quantiles of amount',
        labels: ['p1', 'p25', 'p50', 'p75', 'p99'],
        baseline: [48, 49, 50, 51, 52],
        candidate: [148, 149, 150, 151, 152],
      },
    ]);
    expect(topValueSeries(evidence)).toEqual([
      {
        title: 'Most frequent values of region',
        labels: ['north', 'south', 'east'],
        baseline: [6, 4, 0],
        candidate: [0, 0, 4],
      },
    ]);
    expect(failedChecks(evidence).map((c) => c.name)).toEqual(['record-delta']);
  });

  it('draws nothing while the evidence is pending', () => {
    const pending: Evidence = { verdict: 'pending', checks: [], baseline: null, candidate: null };
    expect(nullRateSeries(pending)).toBeNull();
    expect(quantileSeries(pending)).toEqual([]);
    expect(topValueSeries(pending)).toEqual([]);
  });
});
