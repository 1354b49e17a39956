import { StatusBatcher } from './status-batcher';
import { JobBatch } from './status.repository';

const batch = (token: string): JobBatch => ({
  job: { environment: 'e', pipeline: 'p', pipelineToken: token, publisherToken: null, filename: 'f.csv' },
  events: [],
});

/** A writer that records what each write held and fails as `fail` says. */
function writer(fail: (tokens: string[]) => Error | null) {
  const writes: string[][] = [];
  const write = async (batches: readonly JobBatch[]) => {
    const tokens = batches.map((b) => b.job.pipelineToken);
    writes.push(tokens);
    await new Promise((r) => setImmediate(r));
    const err = fail(tokens);
    if (err) throw err;
  };
  return { writes, batcher: new StatusBatcher(write) };
}

const tokens = ['a', 'b', 'c', 'd', 'e', 'f'];

describe('StatusBatcher', () => {
  it('sends writes that arrive while two are in flight together in the next', async () => {
    const { writes, batcher } = writer(() => null);
    await Promise.all(tokens.map((t) => batcher.record(batch(t))));
    expect(writes).toEqual([['a'], ['b'], ['c', 'd', 'e', 'f']]);
  });

  it('writes each job of a write PostgreSQL refused again alone: only the one at fault fails', async () => {
    const refused = Object.assign(new Error('value too long'), { code: '22001' });
    const { writes, batcher } = writer((t) => (t.includes('d') ? refused : null));
    const settled = await Promise.allSettled(tokens.map((t) => batcher.record(batch(t))));
    expect(settled.map((s) => (s.status === 'fulfilled' ? 'ok' : 'failed')).join(' ')).toBe(
      'ok ok ok failed ok ok',
    );
    expect(writes.slice(2)).toEqual([['c', 'd', 'e', 'f'], ['c'], ['d'], ['e'], ['f']]);
  });

  it('fails every job of a write whose commit is unknown (no answer from PostgreSQL), without writing again', async () => {
    const lost = new Error('Connection terminated unexpectedly');
    const { writes, batcher } = writer((t) => (t.length > 1 ? lost : null));
    const settled = await Promise.allSettled(tokens.map((t) => batcher.record(batch(t))));
    expect(settled.map((s) => (s.status === 'fulfilled' ? 'ok' : 'failed')).join(' ')).toBe(
      'ok ok failed failed failed failed',
    );
    expect(writes).toEqual([['a'], ['b'], ['c', 'd', 'e', 'f']]);
  });
});
