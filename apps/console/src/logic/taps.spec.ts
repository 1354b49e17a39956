import {
  cellText,
  failingTaps,
  isFailing,
  lastRun,
  parsePackages,
  recordColumns,
  scheduleNote,
} from './taps';

const run = (mode: string, status: string, startedAt: string, error: string | null = null) => ({
  mode,
  trigger: 'manual',
  status,
  startedAt,
  error,
});

describe("the Taps pages' logic", () => {
  it('takes the newest real run as the last status, never a test', () => {
    const runs = [
      run('test', 'error', '2026-11-27T10:02:00Z'),
      run('run', 'success', '2026-11-27T10:01:00Z'),
    ];
    expect(lastRun(runs)?.status).toBe('success');
    expect(lastRun([run('test', 'success', '2026-11-27T10:00:00Z')])).toBeNull();
  });

  it('calls a tap failing when its latest run (skipped ones aside) ended in an error, and not once it succeeded again', () => {
    expect(isFailing([run('run', 'skipped', 'b'), run('run', 'error', 'a')])).toBe(true);
    expect(isFailing([run('run', 'success', 'b'), run('run', 'error', 'a')])).toBe(false);
    expect(isFailing([run('test', 'error', 'b')])).toBe(false);
    expect(isFailing([])).toBe(false);
  });

  it('lists failing taps most recently failed first, with the run that failed', () => {
    const failing = failingTaps([
      { name: 'old', runs: [run('run', 'error', '2026-11-26T00:00:00Z', 'boom')] },
      { name: 'fine', runs: [run('run', 'success', '2026-11-27T00:00:00Z')] },
      { name: 'new', runs: [run('run', 'error', '2026-11-27T00:00:00Z', 'bang')] },
    ]);
    expect(failing.map((f) => [f.name, f.run.error])).toEqual([
      ['new', 'bang'],
      ['old', 'boom'],
    ]);
  });

  it('reads packages separated by commas, spaces or lines', () => {
    expect(parsePackages(' requests==2.32.3, httpx\nlxml ')).toEqual(['requests==2.32.3', 'httpx', 'lxml']);
    expect(parsePackages('')).toEqual([]);
  });

  it("builds the records table from the result's columns, else from the records' keys in first-seen order", () => {
    expect(recordColumns([{ b: 1 }], ['a', 'b'])).toEqual(['a', 'b']);
    expect(recordColumns([{ b: 1, a: 2 }, { c: 3, a: 1 }, 'x'], null)).toEqual(['b', 'a', 'c']);
    expect(cellText({ n: 1 })).toBe('{"n":1}');
    expect(cellText(null)).toBe('');
    expect(cellText(0)).toBe('0');
    expect(cellText('text')).toBe('text');
  });

  it('says why a tap has no next fire time', () => {
    expect(scheduleNote({ cronExpression: null, enabled: true })).toBe('not scheduled');
    expect(scheduleNote({ cronExpression: '0 0 7 ? * MON-FRI', enabled: false })).toBe('schedule disabled');
    expect(scheduleNote({ cronExpression: '0 0 7 ? * MON-FRI', enabled: true })).toBeNull();
  });
});
