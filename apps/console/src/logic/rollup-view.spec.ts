import { RollupJob, StatusEntry, rejectsOf, rejectsTable, rowsSoFar, stagesOf, toneOf } from './rollup-view';

const entry = (
  processName: string,
  state: StatusEntry['state'],
  description: string,
  epoch: number,
): StatusEntry => ({
  processName,
  state,
  description,
  epoch,
});

const job = (over: Partial<RollupJob> = {}): RollupJob => ({
  pipelineToken: 't',
  pipeline: 'sales',
  filename: 'sales.csv',
  status: 'processing',
  startedAt: '2026-11-22T05:03:48.143Z',
  elapsed: '1s',
  lastError: null,
  rowsLoaded: null,
  rowsRejected: null,
  ...over,
});

describe('toneOf', () => {
  it('maps every job status to its colour family', () => {
    expect(['success', 'warning', 'error', 'timed_out', 'processing'].map(toneOf)).toEqual([
      'ok',
      'warn',
      'bad',
      'bad',
      'busy',
    ]);
  });
});

describe('stagesOf', () => {
  it('keeps the order stages were reached and the latest entry of each, whatever order events come in', () => {
    const events = [
      entry('DataQuality', 'end', '3 rows checked, 1 rejected', 40),
      entry('StreamNotifier', 'begin', 'receiving sales.csv', 10),
      entry('DataQuality', 'begin', 'checking', 30),
      entry('StreamNotifier', 'end', 'received', 20),
      entry('PostgresLoader', 'processing', '2 rows loaded so far; 1 rejected; 30 bytes read', 50),
    ];
    expect(stagesOf(events)).toEqual([
      { name: 'StreamNotifier', state: 'end', description: 'received' },
      { name: 'DataQuality', state: 'end', description: '3 rows checked, 1 rejected' },
      {
        name: 'PostgresLoader',
        state: 'processing',
        description: '2 rows loaded so far; 1 rejected; 30 bytes read',
      },
    ]);
  });
});

describe('rowsSoFar', () => {
  it('reads the latest loader progress entry, null before any', () => {
    expect(rowsSoFar([entry('StreamNotifier', 'begin', 'receiving', 1)])).toBeNull();
    expect(
      rowsSoFar([
        entry(
          'PostgresLoader',
          'processing',
          '120000 rows loaded so far; 3 rejected; 4194304 of 16777216 bytes read (25%)',
          5,
        ),
        entry('PostgresLoader', 'processing', '5000 rows loaded so far; 0 rejected; 1 bytes read', 2),
      ]),
    ).toEqual({ loaded: 120000, rejected: 3 });
  });
});

describe('rejectsOf and rejectsTable', () => {
  it("reads the first reject's line and reason from a job that loaded nothing, and where rejects are kept", () => {
    const description =
      "nothing was loaded: all 2 record(s) were rejected (the first: line 2: 'abc' is not an int); they are kept in ingest.t_rejects";
    const failed = job({ status: 'error', lastError: { processName: 'DataQuality', description } });
    const events = [entry('DataQuality', 'error', description, 9)];
    expect(rejectsOf(failed, events)).toEqual([{ line: 2, reason: "'abc' is not an int" }]);
    expect(rejectsTable(events)).toBe('ingest.t_rejects');
  });

  it('finds nothing in a job without rejects, and the table of a warning job', () => {
    const events = [
      entry('PostgresLoader', 'end', 'loaded 9 rows into a.b; 1 rejected rows kept in a.b_rejects', 3),
    ];
    expect(rejectsOf(job({ status: 'warning' }), events)).toEqual([]);
    expect(rejectsTable(events)).toBe('a.b_rejects');
    expect(rejectsTable([])).toBeNull();
  });
});
