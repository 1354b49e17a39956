import { randomUUID } from 'node:crypto';
import type { VectorStore } from '@tapyard/vector-stores';
import { openVectorStore, peerPolicy, vectorPeerFields } from './support/vector-peers';

/**
 * PostgreSQL keeps 63 bytes of a name: index names made from a long table name would be cut there and
 * collide (both indexes of a 62-byte table, or the indexes of two tables sharing a long prefix), so
 * PostgreSQL chooses them.
 */
describe('pgvector: a table name near the 63-byte limit', () => {
  let store: VectorStore;
  const created: string[] = [];

  beforeAll(async () => {
    const fields = vectorPeerFields('pgvector');
    store = openVectorStore('pgvector', fields, peerPolicy(fields));
    await store.probe();
  });
  afterAll(async () => {
    for (const c of created) await store.drop(c).catch(() => undefined);
    await store.close();
  });

  it.each([48, 55, 61, 62, 63])('a table of %i characters gets its container and indexes', async (length) => {
    const container = store.containerName(`t${randomUUID().replace(/-/g, '')}`.padEnd(length, 'x'));
    created.push(container);
    expect(await store.ensure(container, 4)).toEqual({ created: true });
    expect(await store.dimension(container)).toBe(4);
  });

  it('two tables whose names share their first 60 characters both get their indexes', async () => {
    const prefix = `t${randomUUID().replace(/-/g, '')}`.padEnd(60, 'x');
    for (const tail of ['aaa', 'bbb']) {
      const container = store.containerName(`${prefix}${tail}`);
      created.push(container);
      expect(await store.ensure(container, 4)).toEqual({ created: true });
      await store.upsert(container, [
        {
          id: randomUUID(),
          text: tail,
          metadata: { uri: `doc-${tail}` },
          vector: new Float32Array([1, 0, 0, 0]),
        },
      ]);
      expect(await store.chunkIds(container, `doc-${tail}`)).toHaveLength(1);
    }
  });
});
