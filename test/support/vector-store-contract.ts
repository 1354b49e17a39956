import { randomUUID } from 'node:crypto';
import { EgressPolicy } from '@tapyard/egress';
import type { VectorStoreName } from '@tapyard/model';
import {
  ChunkRecord,
  VectorContainerMissing,
  VectorDimensionMismatch,
  VectorStore,
} from '@tapyard/vector-stores';
import { ServiceUnavailableError } from '@tapyard/core';
import { openVectorStore, peerPolicy, vectorPeerFields } from './vector-peers';

const DIM = 8;

/** A unit vector along axis `i`, optionally tilted towards axis `j`. */
export function axis(i: number, j?: number, tilt = 0): Float32Array {
  const v = new Float32Array(DIM);
  v[i] = 1;
  if (j !== undefined) v[j] = tilt;
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

function chunk(
  uri: string,
  index: number,
  vector: Float32Array,
  extra: Record<string, string | number | boolean> = {},
): ChunkRecord {
  return {
    id: randomUUID(),
    text: `${uri} chunk ${index}`,
    vector,
    metadata: {
      uri,
      filename: uri.split('/').pop() ?? uri,
      chunkIndex: index,
      pipeline: 'contract',
      contentHash: 'h'.repeat(64),
      ingestedAt: '2026-11-23T00:00:00.000Z',
      ...extra,
    },
  };
}

/**
 * The behaviour every vector store plug-in must have, against its real local peer. One call per store
 * in test/vector-store-contract.e2e-spec.ts; a new store adds one line there.
 */
export function vectorStoreContract(name: VectorStoreName): void {
  describe(`vector store contract: ${name}`, () => {
    let store: VectorStore;
    let container: string;
    const created: string[] = [];
    const fresh = (): string => {
      const c = store.containerName(`c${randomUUID().replace(/-/g, '').slice(0, 12)}`);
      created.push(c);
      return c;
    };

    beforeAll(async () => {
      const fields = vectorPeerFields(name);
      store = openVectorStore(name, fields, peerPolicy(fields));
      await store.probe();
      container = fresh();
      expect(await store.ensure(container, DIM)).toEqual({ created: true });
    });

    afterAll(async () => {
      for (const c of created) await store.drop(c).catch(() => undefined);
      await store.close();
    });

    it('creates a container once and reports its dimension', async () => {
      expect(await store.ensure(container, DIM)).toEqual({ created: false });
      expect(await store.dimension(container)).toBe(DIM);
      expect(await store.dimension(store.containerName('neverMadeHere'))).toBeNull();
      expect(await store.exists(container)).toBe(true);
      expect(await store.exists(store.containerName('neverMadeHere'))).toBe(false);
      expect(await store.list()).toContain(container);
    });

    it('keeps the creation mark of a container it creates, and only then', async () => {
      const marked = fresh();
      const mark = randomUUID();
      expect(await store.ensure(marked, DIM, mark)).toEqual({ created: true });
      expect(await store.creationMark(marked)).toBe(mark);
      // An existing container is never changed: the first creation's mark stays.
      expect(await store.ensure(marked, DIM, randomUUID())).toEqual({ created: false });
      expect(await store.creationMark(marked)).toBe(mark);
      // Dropped and made again without one (as another tool would): no mark.
      await store.drop(marked);
      expect(await store.creationMark(marked)).toBeNull();
      expect(await store.ensure(marked, DIM)).toEqual({ created: true });
      expect(await store.creationMark(marked)).toBeNull();
      expect(await store.creationMark(container)).toBeNull();
    });

    it('refuses vectors of another dimension with a typed error', async () => {
      await expect(store.ensure(container, DIM + 1)).rejects.toBeInstanceOf(VectorDimensionMismatch);
    });

    it('ranks by cosine similarity, reported in [-1, 1] whatever the store measures', async () => {
      const c = fresh();
      await store.ensure(c, DIM);
      const same = chunk('doc://a', 0, axis(0));
      const near = chunk('doc://b', 0, axis(0, 1, 1)); // 45°: cos = 0.7071
      const orthogonal = chunk('doc://c', 0, axis(2));
      const opposite = chunk(
        'doc://d',
        0,
        axis(0).map((x) => -x),
      );
      await store.upsert(c, [orthogonal, opposite, near, same]);
      const hits = await store.search(c, axis(0), 4);
      expect(hits.map((h) => h.id)).toEqual([same.id, near.id, orthogonal.id, opposite.id]);
      const sims = hits.map((h) => h.similarity);
      expect(sims[0]).toBeCloseTo(1, 3);
      expect(sims[1]).toBeCloseTo(Math.SQRT1_2, 3);
      expect(sims[2]).toBeCloseTo(0, 3);
      expect(sims[3]).toBeCloseTo(-1, 3);
      expect(hits[0].text).toBe(same.text);
      expect(hits[0].metadata).toEqual(same.metadata);
      expect(await store.search(c, axis(0), 2)).toHaveLength(2);
    });

    it('upserts by id: the same id twice keeps one chunk, with the newer text', async () => {
      const c = fresh();
      await store.ensure(c, DIM);
      const first = chunk('doc://same', 0, axis(3));
      await store.upsert(c, [first]);
      await store.upsert(c, [{ ...first, text: 'replaced' }]);
      const hits = await store.search(c, axis(3), 10);
      expect(hits).toHaveLength(1);
      expect(hits[0].text).toBe('replaced');
    });

    it("lists a document's chunk ids and deletes by id", async () => {
      const c = fresh();
      await store.ensure(c, DIM);
      const a = [0, 1, 2].map((i) => chunk('doc://x/a.txt', i, axis(i)));
      const b = chunk('doc://x/b.txt', 0, axis(4));
      await store.upsert(c, [...a, b]);
      expect((await store.chunkIds(c, 'doc://x/a.txt')).sort()).toEqual(a.map((x) => x.id).sort());
      await store.delete(c, [a[1].id, randomUUID()]);
      expect((await store.chunkIds(c, 'doc://x/a.txt')).sort()).toEqual([a[0].id, a[2].id].sort());
      expect(await store.chunkIds(c, 'doc://x/b.txt')).toEqual([b.id]);
      expect(await store.chunkIds(c, 'doc://nothing')).toEqual([]);
    });

    it('filters on metadata: equality, any-of, and several keys at once', async () => {
      const c = fresh();
      await store.ensure(c, DIM);
      const red = chunk('doc://f/1', 0, axis(0), { colour: 'red', year: 2024, public: true });
      const blue = chunk('doc://f/2', 0, axis(0, 1, 0.1), { colour: 'blue', year: 2025, public: true });
      const green = chunk('doc://f/3', 0, axis(0, 1, 0.2), { colour: 'green', year: 2025, public: false });
      await store.upsert(c, [red, blue, green]);
      const ids = async (filter: Record<string, unknown>): Promise<string[]> =>
        (await store.search(c, axis(0), 10, filter as never)).map((h) => h.id);
      expect(await ids({ colour: 'blue' })).toEqual([blue.id]);
      expect(await ids({ year: 2025 })).toEqual([blue.id, green.id]);
      expect(await ids({ colour: ['red', 'green'] })).toEqual([red.id, green.id]);
      expect(await ids({ year: 2025, public: false })).toEqual([green.id]);
      expect(await ids({ uri: 'doc://f/1' })).toEqual([red.id]);
      expect(await ids({ colour: 'purple' })).toEqual([]);
    });

    it('takes a bulk upsert of 1000 chunks and finds each', async () => {
      const c = fresh();
      await store.ensure(c, DIM);
      const many = Array.from({ length: 1000 }, (_, i) =>
        chunk(`doc://bulk/${i % 10}`, i, axis(i % DIM, (i + 1) % DIM, (i % 97) / 97)),
      );
      await store.upsert(c, many);
      expect((await store.chunkIds(c, 'doc://bulk/3')).length).toBe(100);
      const probe = many[517];
      const [top] = await store.search(c, probe.vector, 1, { uri: probe.metadata.uri as string });
      expect(top.similarity).toBeCloseTo(1, 3);
    });

    it('says which container is missing', async () => {
      const missing = store.containerName('neverCreated');
      await expect(store.search(missing, axis(0), 3)).rejects.toBeInstanceOf(VectorContainerMissing);
    });

    it('drops a container, and reports a second drop as nothing to drop', async () => {
      const c = fresh();
      await store.ensure(c, DIM);
      await store.upsert(c, [chunk('doc://drop', 0, axis(1))]);
      expect(await store.drop(c)).toBe(true);
      expect(await store.dimension(c)).toBeNull();
      expect(await store.exists(c)).toBe(false);
      expect(await store.list()).not.toContain(c);
      expect(await store.drop(c)).toBe(false);
    });

    it('connects nowhere the egress policy refuses (a loopback address not allow-listed)', async () => {
      const fields = vectorPeerFields(name);
      const guarded = openVectorStore(name, fields, new EgressPolicy());
      await expect(guarded.probe()).rejects.toThrow(/egress policy|refused/i);
      await guarded.close();
    });

    it('reports an unreachable store as unavailable, naming it', async () => {
      const fields = { ...vectorPeerFields(name) };
      // A port nothing listens on (reserved for the discard service, closed here).
      if (fields.url) fields.url = fields.url.replace(/:\d+/, ':9');
      if (fields.connectionString) fields.connectionString = fields.connectionString.replace(/:\d+\//, ':9/');
      if (fields.port) fields.port = '9';
      const dead = openVectorStore(name, fields, peerPolicy(fields));
      const err = await dead.probe().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ServiceUnavailableError);
      expect((err as ServiceUnavailableError).service).toBe(name);
      await dead.close();
    });
  });
}
