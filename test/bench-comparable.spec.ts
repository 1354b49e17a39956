import { BUSY_LIMIT, comparability } from '../bench/support';

/** A run of 60 s on 2 cores: 120 CPU seconds of capacity. */
const run = (busy: number, bench: number, peers: number) => ({
  totalSeconds: 120,
  busySeconds: busy,
  benchSeconds: bench,
  peerSeconds: peers,
});

describe('a bench run is comparable only on a machine the bench had to itself', () => {
  it('counts a run that kept the machine busy with its own processes and peers', () => {
    const verdict = comparability(run(118, 90, 25));
    expect(verdict.comparable).toBe(true);
    expect(verdict.line).toMatch(/other processes 3\.0 s \(3 %\): comparable$/);
  });

  it('refuses a run during which other processes took more than the limit', () => {
    const others = 120 * BUSY_LIMIT + 6;
    const verdict = comparability(run(60 + others, 50, 10));
    expect(verdict.comparable).toBe(false);
    expect(verdict.line).toMatch(/\nNOT COMPARABLE: other processes took 30 % of the machine during the run/);
  });

  it('accepts other processes up to the limit', () => {
    expect(comparability(run(60 + 120 * BUSY_LIMIT, 50, 10)).comparable).toBe(true);
  });

  it('refuses a run with a missing peer even on a quiet machine, naming each one', () => {
    const verdict = comparability(run(40, 30, 10), ['kafka: connect ECONNREFUSED', 'milvus: no plug-in']);
    expect(verdict.comparable).toBe(false);
    expect(verdict.line).toMatch(
      /NOT COMPARABLE: peer missing: kafka: connect ECONNREFUSED; peer missing: milvus: no plug-in$/,
    );
  });

  it('reads a remainder below zero (the samples are a moment apart) as no other load', () => {
    expect(comparability(run(50, 45, 10)).comparable).toBe(true);
  });
});
