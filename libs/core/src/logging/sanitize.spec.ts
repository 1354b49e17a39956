import { errorMessage, sanitize } from './sanitize';

describe('sanitize', () => {
  it('removes credentials from URLs and secret-looking pairs', () => {
    expect(sanitize('connect to postgres://loader:pw123@db:5432/x failed')).toBe(
      'connect to postgres://***:***@db:5432/x failed',
    );
    expect(sanitize('mongodb://user@h/x')).toBe('mongodb://***@h/x');
    expect(sanitize('bad password=hunter2; token: abc apiKey=k1')).toBe(
      'bad password=***; token=*** apiKey=***',
    );
    expect(sanitize('connect ECONNREFUSED 127.0.0.1:5432')).toBe('connect ECONNREFUSED 127.0.0.1:5432');
  });

  it('reads a long run of scheme characters in linear time', () => {
    const run = 'a'.repeat(50_000);
    const started = process.cpuUsage();
    expect(sanitize(`${run}://u:p@h ${run}`)).toBe(`${run}://***:***@h ${run}`);
    // The two regexes it replaced took seconds on this; one pass takes a few milliseconds (CPU time:
    // on a loaded machine the wall clock also counts what others ran).
    const used = process.cpuUsage(started);
    expect((used.user + used.system) / 1000).toBeLessThan(200);
  });

  it('flattens aggregate errors', () => {
    const e = new AggregateError([new Error('a failed'), new Error('b failed')]);
    expect(errorMessage(e)).toBe('a failed; b failed');
    expect(errorMessage('plain')).toBe('plain');
  });
});
