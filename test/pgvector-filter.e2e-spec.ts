import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { ChunkRecord, MetadataFilter, VectorStore } from '@tapyard/vector-stores';
import { pgvectorSearch } from '../libs/vector-stores/src/pgvector/pgvector-filter';
import { openVectorStore, peerPolicy, vectorPeerFields } from './support/vector-peers';

/**
 * A filtered pgvector search is exact (it reads every row the filter keeps, not the HNSW index's
 * candidates): the rows come from the table's GIN index on `metadata`, not from reading the whole
 * table, and the answer is still the exact nearest rows among those the filter keeps.
 */
describe('pgvector: a filtered search reads the rows its filter keeps through an index', () => {
  const ROWS = 20_000;
  let store: VectorStore;
  let pg: Client;
  let container: string;
  const records: ChunkRecord[] = [];

  beforeAll(async () => {
    const fields = vectorPeerFields('pgvector');
    store = openVectorStore('pgvector', fields, peerPolicy(fields));
    container = store.containerName(`filtered_${randomUUID().replace(/-/g, '')}`);
    await store.ensure(container, 4);
    let seed = 11;
    const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed / 2147483648 - 0.5);
    for (let i = 0; i < ROWS; i++) {
      records.push({
        id: randomUUID(),
        text: `chunk ${i}`,
        metadata: { uri: `doc://${i % 2000}`, chunkIndex: i, shard: i % 50, lang: i % 2 ? 'en' : 'de' },
        vector: new Float32Array([rnd(), rnd(), rnd(), rnd()]),
      });
    }
    for (let i = 0; i < ROWS; i += 1000) await store.upsert(container, records.slice(i, i + 1000));
    pg = new Client({ connectionString: fields.connectionString });
    await pg.connect();
    // What autovacuum does after a bulk load: the GIN index's pending entries merged, statistics gathered.
    await pg.query(`VACUUM ANALYZE ${container}`);
  });
  afterAll(async () => {
    await pg?.end();
    await store?.drop(container).catch(() => undefined);
    await store?.close();
  });

  /** Node types of the plan of the store's own filtered search statement. */
  async function plan(filter: MetadataFilter): Promise<string[]> {
    const q = pgvectorSearch(new Float32Array([0.1, 0.2, 0.3, 0.4]), 5, filter);
    await pg.query('BEGIN');
    try {
      await pg.query(q.setting);
      const res = await pg.query<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (FORMAT JSON) ${q.sql(container)}`,
        q.params,
      );
      const nodes: string[] = [];
      const walk = (n: { 'Node Type': string; 'Index Name'?: string; Plans?: unknown[] }): void => {
        nodes.push(n['Index Name'] ? `${n['Node Type']} ${n['Index Name']}` : n['Node Type']);
        (n.Plans ?? []).forEach((c) => walk(c as typeof n));
      };
      walk((res.rows[0]['QUERY PLAN'] as { Plan: Parameters<typeof walk>[0] }[])[0].Plan);
      return nodes;
    } finally {
      await pg.query('ROLLBACK');
    }
  }

  it.each<[string, MetadataFilter]>([
    ['one document', { uri: 'doc://7' }],
    ['any of two shards and a language', { shard: [3, 4], lang: 'en' }],
  ])('%s: a bitmap scan of the metadata index, no sequential scan', async (_, filter) => {
    const nodes = await plan(filter);
    expect(nodes).not.toContain('Seq Scan');
    expect(nodes.some((n) => /^Bitmap Index Scan .*metadata/.test(n))).toBe(true);
  });

  it('the answer is the exact nearest rows among those the filter keeps', async () => {
    const query = new Float32Array([0.3, -0.1, 0.2, 0.05]);
    const keep = records.filter(
      (r) => [3, 4].includes(r.metadata.shard as number) && r.metadata.lang === 'en',
    );
    const norm = (v: Float32Array): number => Math.hypot(...v);
    const cosine = (v: Float32Array): number =>
      v.reduce((s, x, k) => s + x * query[k], 0) / (norm(v) * norm(query));
    const expected = keep
      .map((r) => ({ id: r.id, c: cosine(r.vector) }))
      .sort((a, b) => b.c - a.c)
      .slice(0, 5)
      .map((r) => r.id);
    const hits = await store.search(container, query, 5, { shard: [3, 4], lang: 'en' });
    expect(hits.map((h) => h.id)).toEqual(expected);
  });
});

describe('pgvector: a table made before the metadata index gets it when the platform prepares it', () => {
  let store: VectorStore;
  let pg: Client;
  let container: string;

  beforeAll(async () => {
    const fields = vectorPeerFields('pgvector');
    store = openVectorStore('pgvector', fields, peerPolicy(fields));
    container = store.containerName(`older_${randomUUID().replace(/-/g, '')}`);
    pg = new Client({ connectionString: fields.connectionString });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await store?.drop(container).catch(() => undefined);
    await store?.close();
  });

  const metadataIndexes = async (): Promise<string[]> =>
    (
      await pg.query<{ def: string }>(
        `SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index WHERE indrelid = to_regclass($1)`,
        [container],
      )
    ).rows
      .map((r) => r.def)
      .filter((d) => d.includes('USING gin (metadata jsonb_path_ops)'));

  it('creates the GIN index once, keeping the rows, however often the table is prepared', async () => {
    // The table as the platform made it before the index existed.
    await pg.query(
      `CREATE TABLE ${container} (id uuid PRIMARY KEY, content text NOT NULL, metadata jsonb NOT NULL, embedding vector(4) NOT NULL)`,
    );
    await pg.query(`CREATE INDEX ON ${container} USING hnsw (embedding vector_cosine_ops)`);
    await pg.query(`CREATE INDEX ON ${container} ((metadata ->> 'uri'))`);
    const kept: ChunkRecord = {
      id: randomUUID(),
      text: 'kept',
      metadata: { uri: 'doc://old', shard: 1 },
      vector: new Float32Array([1, 0, 0, 0]),
    };
    await store.upsert(container, [kept]);
    expect(await metadataIndexes()).toEqual([]);

    await expect(store.ensure(container, 4)).resolves.toEqual({ created: false });
    expect(await metadataIndexes()).toHaveLength(1);
    await store.ensure(container, 4);
    expect(await metadataIndexes()).toHaveLength(1);
    const hits = await store.search(container, new Float32Array([1, 0, 0, 0]), 5, { shard: 1 });
    expect(hits.map((h) => h.id)).toEqual([kept.id]);
  });
});
