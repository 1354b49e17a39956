import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { BUSY_LIMIT, MachineWatch, comparability, sampleMachine } from '../bench/support';

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

describe("a harness's detached daemons count as the bench's peers", () => {
  /** CPU ticks (utime + stime) of a process, or null once it is gone. */
  const ticksOf = (pid: number): number | null => {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return f[0] === 'Z' ? null : Number(f[11]) + Number(f[12]);
    } catch {
      return null;
    }
  };

  it('counts what a process outside the bench tree spent, after it exited', async () => {
    // Both watches read the same samples: they differ only in the harness, whatever else the machine
    // did meanwhile (under a loaded e2e run the local services took 0.4 s between two readings).
    const start = sampleMachine();
    const counted = new MachineWatch(start);
    const uncounted = new MachineWatch(start);
    // Started by a shell that exits at once, so it is re-parented away from this process's tree,
    // as scripts/cluster's services and app hosts are. It burns 0.4 CPU s, then idles until killed.
    const burn =
      'const t = process.cpuUsage(); while (process.cpuUsage(t).user < 400000); setInterval(() => {}, 1000)';
    const pid = Number(
      execFileSync(
        'sh',
        ['-c', `"$0" -e "$1" >/dev/null 2>&1 </dev/null & echo $!`, process.execPath, burn],
        {
          encoding: 'utf8',
        },
      ).trim(),
    );
    try {
      for (let i = 0; i < 1200 && (ticksOf(pid) ?? 0) < 40; i++) await sleep(50);
      expect(ticksOf(pid)).toBeGreaterThanOrEqual(40);
      counted.countAsPeers([pid]);
    } finally {
      process.kill(pid, 'SIGKILL');
    }
    for (let i = 0; i < 200 && ticksOf(pid) !== null; i++) await sleep(50);
    expect(ticksOf(pid)).toBeNull();

    const end = sampleMachine();
    const withHarness = counted.readings(end);
    const without = uncounted.readings(end);
    expect(withHarness.peerSeconds - without.peerSeconds).toBeGreaterThanOrEqual(0.4 - 1e-9);
    expect(withHarness.benchSeconds).toBe(without.benchSeconds);
  });
});
