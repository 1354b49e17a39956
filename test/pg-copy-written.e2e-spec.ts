import { Client, PoolClient } from 'pg';
import type { CsvChunkPayload, Payload } from '@tapyard/destinations';
import { copyPayloads } from '../libs/destinations/src/postgres/pg-copy';
import { PartBuffers } from '../libs/ingestion/src/part-buffers';
import { TEST_DATABASE_URL } from './support/env';

/** A part that fits in one socket write, and one that does not (its write finishes later). */
const SMALL = 32 << 10;
const LARGE = 4 << 20;
const PARTS = 12;

/**
 * A staged part's buffer, recycled by PartBuffers through the COPY of its chunks: the buffer is
 * handed out again (and at once overwritten with the next part's rows, as the next GET would) only
 * once PostgreSQL's socket has sent it, so the table holds every row exactly once, as written.
 */
describe('COPY gives back a part buffer only once it is sent', () => {
  let pg: Client;

  beforeAll(async () => {
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
    await pg.query('CREATE TEMP TABLE recycled (id int, label text)');
  });

  afterAll(async () => {
    await pg.end();
  });

  it('loads every row of every part, though each buffer holds the next part as soon as it is free', async () => {
    const parts = new PartBuffers();
    const seen = new WeakSet<ArrayBufferLike>();
    let reused = 0;
    let next = 1;

    /** Rows into a part's buffer: one chunk, or for a large part a few rows and the rest. */
    function part(size: number): CsvChunkPayload[] {
      const b = parts.memory(size);
      if (seen.has(b.buffer)) reused++;
      seen.add(b.buffer);
      const first = next;
      const cuts: number[] = [];
      let at = 0;
      for (;;) {
        const row = `${next},row ${next}\n`;
        if (at + row.length > size) break;
        at += b.write(row, at, 'latin1');
        next++;
        if (size === LARGE && next - first === 10) cuts.push(at);
      }
      b.fill('9', at); // the part's unused end: never sent
      const ends = [...cuts, at];
      return ends.map((end, k) => ({
        kind: 'csv',
        bytes: b.subarray(k === 0 ? 0 : ends[k - 1], end),
        rows: 0,
        line: 1,
        eol: 'lf',
        copyOptions: 'FORMAT csv',
        columns: ['id', 'label'],
      }));
    }

    async function* payloads(): AsyncGenerator<Payload> {
      for (let n = 0; n < PARTS; n++) {
        // Small parts first: the first is held by the COPY stream until the server is ready for data.
        const batch = part(n < 2 || n % 3 === 0 ? SMALL : LARGE);
        parts.track([batch]);
        yield* batch;
      }
    }

    await copyPayloads(pg as unknown as PoolClient, 'recycled', ['id', 'label'], payloads(), () => undefined);
    const rows = next - 1;
    const { rows: got } = await pg.query<{ n: string; ids: string; sum: string; wrong: string }>(
      `SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(id) AS sum,
              count(*) FILTER (WHERE label IS DISTINCT FROM 'row ' || id) AS wrong FROM recycled`,
    );
    expect(reused).toBeGreaterThan(0);
    expect(got[0]).toEqual({
      n: String(rows),
      ids: String(rows),
      sum: String((rows * (rows + 1)) / 2),
      wrong: '0',
    });
  });
});
