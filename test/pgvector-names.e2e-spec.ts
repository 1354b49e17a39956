import { randomUUID } from 'node:crypto';
import type { VectorStore } from '@tapyard/vector-stores';
import { openVectorStore, peerPolicy, vectorPeerFields } from './support/vector-peers';

/**
 * pgvector names a container's indexes after its table; PostgreSQL keeps 63 bytes of a name, so a long
 * table's index names are cut to that (as the server itself did before names were quoted by quoteIdent,
 * which refuses longer ones).
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

  it.each([48, 55, 61])('a table of %i characters gets its container and indexes', async (length) => {
    const container = store.containerName(`t${randomUUID().replace(/-/g, '')}`.padEnd(length, 'x'));
    created.push(container);
    expect(await store.ensure(container, 4)).toEqual({ created: true });
    expect(await store.dimension(container)).toBe(4);
  });
});
