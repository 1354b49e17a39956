import { setTimeout as sleep } from 'node:timers/promises';
import { StatusService } from './status.service';
import { JobBatch, StatusRepository } from './status.repository';

const job = { environment: 'e', pipeline: 'p', pipelineToken: 't', publisherToken: null, filename: 'f.csv' };

/** A status service whose repository keeps each write's events (process and state) and fails on demand. */
function service() {
  const writes: string[][] = [];
  let failing: Error | null = null;
  const repo = {
    record: async (batches: readonly JobBatch[]) => {
      await new Promise((r) => setImmediate(r));
      if (failing) throw failing;
      writes.push(batches.flatMap((b) => b.events.map((e) => `${e.processName} ${e.state}`)));
    },
  } as unknown as StatusRepository;
  const status = new StatusService(repo, { now: () => Date.now() });
  return { writes, status, fail: (err: Error | null) => (failing = err) };
}

describe('JobEvents.lingerFor', () => {
  it("writes a short job's kept entries with its end, in order, in one write", async () => {
    const { writes, status } = service();
    const events = status.of(job);
    events.add('JobRunner', 'begin', 'started');
    events.add('PostgresLoader', 'begin', 'writing');
    events.lingerFor(1000);
    await sleep(20);
    expect(writes).toEqual([]);
    await events.record('JobRunner', 'end', 'success', 'success');
    expect(writes).toEqual([['JobRunner begin', 'PostgresLoader begin', 'JobRunner end']]);
    // Nothing is left to write when the linger would have ended.
    await sleep(1100);
    expect(writes).toHaveLength(1);
  });

  it("writes a longer job's entries when the linger ends, before its end", async () => {
    const { writes, status } = service();
    const events = status.of(job);
    const started = Date.now();
    events.add('JobRunner', 'begin', 'started');
    events.lingerFor(50);
    while (writes.length === 0 && Date.now() - started < 5000) await sleep(5);
    expect(writes).toEqual([['JobRunner begin']]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    await events.record('JobRunner', 'end', 'success', 'success');
    expect(writes).toEqual([['JobRunner begin'], ['JobRunner end']]);
  });

  it('fails the next write when the lingering one failed, and writes nothing after it', async () => {
    const { writes, status, fail } = service();
    const events = status.of(job);
    events.add('JobRunner', 'begin', 'started');
    fail(new Error('metadata database down'));
    events.lingerFor(10);
    await sleep(50);
    fail(null);
    await expect(events.record('JobRunner', 'end', 'success', 'success')).rejects.toThrow(
      'metadata database down',
    );
    expect(writes).toEqual([]);
    // The job's error entry, written next, goes through.
    await events.record('JobRunner', 'error', 'failed', 'error');
    expect(writes).toEqual([['JobRunner error']]);
  });
});
