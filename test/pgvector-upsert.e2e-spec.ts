import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { ChunkRecord, VectorStore } from '@tapyard/vector-stores';
import { Relay, cuttableProxy } from './support/net';
import { openVectorStore, peerPolicy, vectorPeerFields } from './support/vector-peers';

/**
 * pgvector upserts send their vectors as binary float32, not as decimal text: a third of the bytes
 * on the wire, nothing to print in the worker nor to parse in the server, and every value arrives
 * bit for bit.
 */
describe('pgvector: upserted vectors travel as binary float32', () => {
  const DIM = 384;
  const ROWS = 200;
  let relay: Relay;
  let store: VectorStore;
  let pg: Client;
  let container: string;

  beforeAll(async () => {
    const fields = vectorPeerFields('pgvector');
    const url = new URL(fields.connectionString);
    relay = await cuttableProxy(Number(url.port));
    url.port = String(relay.port);
    const relayed = { ...fields, connectionString: url.toString() };
    store = openVectorStore('pgvector', relayed, peerPolicy(relayed));
    container = store.containerName(`upsert_${randomUUID().replace(/-/g, '')}`);
    await store.ensure(container, DIM);
    pg = new Client({ connectionString: fields.connectionString });
    await pg.connect();
  });
  afterAll(async () => {
    await store?.drop(container).catch(() => undefined);
    await store?.close();
    await pg?.end();
    await relay?.close();
  });

  it('writes every value exactly, extremes included, in under 10 bytes a value', async () => {
    let seed = 5;
    const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed / 2147483648 - 0.5);
    const records: ChunkRecord[] = Array.from({ length: ROWS }, (_, i) => {
      const vector = new Float32Array(DIM).map(() => rnd() / 7);
      // Values whose shortest decimals are long, the largest float32, the smallest subnormal.
      vector[0] = 3.4028234663852886e38;
      vector[1] = 1.401298464324817e-45;
      vector[2] = -(1 / 3);
      return { id: randomUUID(), text: `chunk ${i}`, metadata: { uri: 'doc://x', chunkIndex: i }, vector };
    });
    const before = relay.sent();
    await store.upsert(container, records);
    const perValue = (relay.sent() - before) / (ROWS * DIM);
    // As text a float32 took about 20 bytes (17 digits, a sign, a point, a comma).
    expect(perValue).toBeLessThan(10);

    const rows = (
      await pg.query<{ id: string; embedding: string }>(`SELECT id, embedding::text FROM ${container}`)
    ).rows;
    const written = new Map(
      rows.map((r) => [r.id, Float32Array.from(r.embedding.slice(1, -1).split(','), Number)]),
    );
    expect(written.size).toBe(ROWS);
    for (const r of records) expect(written.get(r.id)).toEqual(r.vector);
  });

  it('refuses an upsert whose vectors differ in dimension, writing none of it', async () => {
    const ok = {
      id: randomUUID(),
      text: 'a',
      metadata: { uri: 'doc://y' },
      vector: new Float32Array(DIM).fill(0.5),
    };
    const short = {
      id: randomUUID(),
      text: 'b',
      metadata: { uri: 'doc://y' },
      vector: new Float32Array(DIM - 1).fill(0.5),
    };
    await expect(store.upsert(container, [ok, short])).rejects.toThrow(/dimension/);
    const found = await pg.query(`SELECT 1 FROM ${container} WHERE id = ANY ($1::uuid[])`, [
      [ok.id, short.id],
    ]);
    expect(found.rowCount).toBe(0);
  });
});
