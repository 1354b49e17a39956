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

/** A writer whose writes wait until `release` (each write's tokens kept in order). */
function held() {
  const writes: string[][] = [];
  const waiting: (() => void)[] = [];
  const write = async (batches: readonly JobBatch[]) => {
    writes.push(batches.map((b) => b.job.pipelineToken));
    await new Promise<void>((r) => waiting.push(r));
  };
  return { writes, batcher: new StatusBatcher(write), release: () => waiting.splice(0).forEach((r) => r()) };
}

/** One turn of the event loop (the batcher writes after the turn's I/O callbacks). */
const turn = () => new Promise((r) => setImmediate(r));

describe('StatusBatcher', () => {
  it('writes what arrives in one turn of the event loop together, and what arrives while two writes are in flight in the next', async () => {
    const { writes, batcher, release } = held();
    const done = [batcher.record(batch('a')), batcher.record(batch('b'))];
    expect(writes).toEqual([]);
    await turn();
    expect(writes).toEqual([['a', 'b']]);
    done.push(batcher.record(batch('c')));
    await turn();
    expect(writes).toEqual([['a', 'b'], ['c']]);
    // Both writers busy: these wait, then go together.
    done.push(batcher.record(batch('d')), batcher.record(batch('e')));
    await turn();
    await turn();
    expect(writes).toHaveLength(2);
    release();
    await turn();
    expect(writes).toEqual([['a', 'b'], ['c'], ['d', 'e']]);
    release();
    await Promise.all(done);
  });

  it('writes each job of a write PostgreSQL refused again alone: only the one at fault fails', async () => {
    const refused = Object.assign(new Error('value too long'), { code: '22001' });
    const { writes, batcher } = writer((t) => (t.includes('d') ? refused : null));
    const settled = await Promise.allSettled(tokens.map((t) => batcher.record(batch(t))));
    expect(settled.map((s) => (s.status === 'fulfilled' ? 'ok' : 'failed')).join(' ')).toBe(
      'ok ok ok failed ok ok',
    );
    expect(writes).toEqual([tokens, ['a'], ['b'], ['c'], ['d'], ['e'], ['f']]);
  });

  it('fails every job of a write whose commit is unknown (no answer from PostgreSQL), without writing again', async () => {
    const lost = new Error('Connection terminated unexpectedly');
    const { writes, batcher } = writer((t) => (t.length > 1 ? lost : null));
    const shared = await Promise.allSettled(tokens.slice(0, 4).map((t) => batcher.record(batch(t))));
    expect(shared.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    // A lone write goes through.
    await expect(batcher.record(batch('e'))).resolves.toBeUndefined();
    expect(writes).toEqual([['a', 'b', 'c', 'd'], ['e']]);
  });
});
