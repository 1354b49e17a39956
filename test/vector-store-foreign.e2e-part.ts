import { randomUUID } from 'node:crypto';
import { closedPort } from './support/net';
import { QdrantClient } from '@qdrant/js-client-rest';
import { ServiceUnavailableError } from '@tapyard/core';
import { VectorDimensionMismatch, VectorStore, VectorStoreInputError } from '@tapyard/vector-stores';
import { openVectorStore, peerPolicy, vectorPeerFields } from './support/vector-peers';

/**
 * Collections a caller may name in a search that Tapyard did not make (another tool filled them, with
 * Chroma's default space or Qdrant's named vectors), and vectors of another dimension: typed answers,
 * never a store's raw 400. Against the real local peers.
 */
const name = (): string => `f${randomUUID().replace(/-/g, '').slice(0, 12)}`;
const unit = (dim: number, i: number): Float32Array => {
  const v = new Float32Array(dim);
  v[i] = 1;
  return v;
};
const chunk = (dim: number, i: number) => ({
  id: randomUUID(),
  text: `chunk ${i}`,
  vector: unit(dim, i),
  metadata: { uri: `doc://foreign/${i}`, chunkIndex: i },
});

function open(store: 'qdrant' | 'chroma'): { vs: VectorStore; url: URL } {
  const fields = vectorPeerFields(store);
  return { vs: openVectorStore(store, fields, peerPolicy(fields)), url: new URL(fields.url) };
}

describe('qdrant: collections made elsewhere, other dimensions', () => {
  let vs: VectorStore;
  let raw: QdrantClient;
  const made: string[] = [];

  beforeAll(() => {
    const peer = open('qdrant');
    vs = peer.vs;
    raw = new QdrantClient({ url: peer.url.origin, checkCompatibility: false });
  });

  afterAll(async () => {
    for (const c of made) await raw.deleteCollection(c).catch(() => undefined);
    await vs.close();
  });

  it('reads the dimension of a plain collection, and refuses vectors of another as a mismatch', async () => {
    const c = name();
    made.push(c);
    await raw.createCollection(c, { vectors: { size: 4, distance: 'Cosine' } });
    expect(await vs.dimension(c)).toBe(4);
    await expect(vs.ensure(c, 8)).rejects.toBeInstanceOf(VectorDimensionMismatch);
    const search = vs.search(c, unit(8, 0), 3);
    await expect(search).rejects.toBeInstanceOf(VectorDimensionMismatch);
    await expect(search).rejects.toMatchObject({ expected: 4, actual: 8 });
    await expect(vs.upsert(c, [chunk(8, 1)])).rejects.toMatchObject({ expected: 4, actual: 8 });
  });

  it('says a collection of named vectors is not one it can use', async () => {
    const c = name();
    made.push(c);
    await raw.createCollection(c, { vectors: { dense: { size: 4, distance: 'Cosine' } } });
    await expect(vs.dimension(c)).rejects.toBeInstanceOf(VectorStoreInputError);
    // It exists all the same: a pipeline that may not adopt is refused it (DocumentLoader).
    expect(await vs.exists(c)).toBe(true);
    await expect(vs.ensure(c, 4)).rejects.toThrow(/named vectors/);
  });

  it('names the reason it cannot reach a server', async () => {
    const unavailable = async (url: string): Promise<string> => {
      const dead = openVectorStore('qdrant', { url }, peerPolicy({ url }));
      const err = await dead.probe().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ServiceUnavailableError);
      return (err as Error).message;
    };
    const port = await closedPort();
    expect(await unavailable(`http://127.0.0.1:${port}`)).toBe(
      `qdrant is unreachable at http://127.0.0.1:${port}: ECONNREFUSED`,
    );
    // The contract's port 9: fetch would refuse it as a bad port; the plug-in's own requests try it.
    expect(await unavailable('http://127.0.0.1:9')).toBe(
      'qdrant is unreachable at http://127.0.0.1:9: ECONNREFUSED',
    );
  });
});

/**
 * Chroma's HTTP API as another tool uses it (default tenant and database): collections made without
 * Tapyard, filled with its own records.
 */
function chromaApi(origin: string) {
  const base = `${origin}/api/v2/tenants/default_tenant/databases/default_database/collections`;
  const send = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`chroma answered ${res.status} to ${method} ${path}: ${text}`);
    return JSON.parse(text) as T;
  };
  return {
    create: (name: string, metadata?: Record<string, unknown>) =>
      send<{ id: string }>('POST', '', { name, ...(metadata ? { metadata } : {}) }),
    upsert: (id: string, records: Record<string, unknown>) => send('POST', `/${id}/upsert`, records),
    metadata: async (name: string) =>
      (await send<{ metadata: Record<string, unknown> | null }>('GET', `/${name}`)).metadata,
    drop: (name: string) => send('DELETE', `/${name}`),
  };
}

describe('chroma: collections made elsewhere, other dimensions', () => {
  let vs: VectorStore;
  let raw: ReturnType<typeof chromaApi>;
  const made: string[] = [];

  beforeAll(() => {
    const peer = open('chroma');
    vs = peer.vs;
    raw = chromaApi(peer.url.origin);
  });

  afterAll(async () => {
    for (const c of made) await raw.drop(c).catch(() => undefined);
    await vs.close();
  });

  it("reads a filled collection's dimension from its vectors and its similarity from its space", async () => {
    const c = name();
    made.push(c);
    // Chroma's default space is l2 (squared distance), not cosine.
    const col = await raw.create(c);
    await raw.upsert(col.id, {
      ids: ['a', 'b', 'c'],
      embeddings: [
        [1, 0, 0, 0],
        [Math.SQRT1_2, Math.SQRT1_2, 0, 0],
        [-1, 0, 0, 0],
      ],
      documents: ['same', 'near', 'opposite'],
      metadatas: [{ uri: 'doc://a' }, { uri: 'doc://b' }, { uri: 'doc://c' }],
    });
    expect(await vs.dimension(c)).toBe(4);
    await expect(vs.ensure(c, 8)).rejects.toMatchObject({ expected: 4, actual: 8 });
    const hits = await vs.search(c, unit(4, 0), 3);
    expect(hits.map((h) => h.text)).toEqual(['same', 'near', 'opposite']);
    expect(hits[0].similarity).toBeCloseTo(1, 5);
    expect(hits[1].similarity).toBeCloseTo(Math.SQRT1_2, 5);
    expect(hits[2].similarity).toBeCloseTo(-1, 5);
    const search = vs.search(c, unit(8, 0), 3);
    await expect(search).rejects.toBeInstanceOf(VectorDimensionMismatch);
    await expect(search).rejects.toMatchObject({ expected: 4, actual: 8 });
    await expect(vs.upsert(c, [chunk(8, 1)])).rejects.toMatchObject({ expected: 4, actual: 8 });
  });

  it('records a dimension for an empty one beside its own metadata', async () => {
    const c = name();
    made.push(c);
    await raw.create(c, { owner: 'someone' });
    expect(await vs.dimension(c)).toBeNull();
    // No dimension yet, but there: a pipeline that may not adopt is refused it (DocumentLoader).
    expect(await vs.exists(c)).toBe(true);
    expect(await vs.ensure(c, 8)).toEqual({ created: false });
    expect(await vs.dimension(c)).toBe(8);
    expect(await raw.metadata(c)).toMatchObject({ owner: 'someone' });
    await expect(vs.ensure(c, 4)).rejects.toBeInstanceOf(VectorDimensionMismatch);
  });

  it('names the reason it cannot reach a server', async () => {
    const fields = { url: 'http://127.0.0.1:9' };
    const dead = openVectorStore('chroma', fields, peerPolicy(fields));
    const err = await dead.probe().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ServiceUnavailableError);
    expect((err as Error).message).toBe('chroma is unreachable at http://127.0.0.1:9: ECONNREFUSED');
  });
});
