import { EgressPolicy } from '@tapyard/egress';
import { vectorContainerName } from '@tapyard/model';
import {
  creationMarkOf,
  creationMarkText,
  type ChunkMetadata,
  type ChunkRecord,
  type MetadataFilter,
  type MetadataValue,
  type SearchHit,
  type VectorStore,
} from '../vector-store';
import {
  VectorContainerMissing,
  VectorDimensionMismatch,
  VectorStoreInputError,
} from '../vector-store.errors';
import { StoreConnection } from '../store-connection';
import { vettedUrl } from '../vetted-url';
import { graphqlLiteral, weaviateCondition, weaviateWhere } from './weaviate-filter';
import { WeaviateAnswerError, WeaviateClass, WeaviateObject, WeaviateRest } from './weaviate-rest';

const NAME = /^[A-Z][_0-9A-Za-z]{0,230}$/;
const BATCH = 500;
/** Weaviate's QUERY_MAXIMUM_RESULTS by default: the most one query may return. */
const PAGE = 10_000;
/** Metadata keys become properties `m_<key>`: never the chunk's own `text`, never a reserved name. */
const PREFIX = 'm_';
const DIMENSION = /tapyard dimension=(\d+)/;
/** The one named vector of the classes Tapyard creates. */
const VECTOR = 'default';

type Kind = 'text' | 'number' | 'boolean';

/**
 * Weaviate through its REST and GraphQL API (WeaviateRest: egress-checked, no redirects): a container
 * is a class (collection) of one self-provided named vector with an HNSW cosine index; its dimension
 * is kept in the class description, and on its second line the creation mark of one ensure() made.
 * Each metadata key is a property declared on first use (text with `field` tokenization, so equality
 * is exact; number; boolean), and filters run in Weaviate. Cosine distance d is similarity 1 - d.
 */
export class WeaviateStore implements VectorStore {
  readonly name = 'weaviate' as const;
  readonly containerField = 'className' as const;
  private readonly conn: StoreConnection<WeaviateRest>;

  constructor(fields: Record<string, string>, policy: EgressPolicy) {
    this.conn = new StoreConnection('weaviate', fields.url, async () => {
      // Refused here, naming why, before any call; each call is checked again as it connects.
      await vettedUrl(policy, fields.url ?? '', 'weaviate');
      return new WeaviateRest(policy, new URL(fields.url ?? ''), fields.apiKey || undefined);
    });
  }

  containerName(collection: string): string {
    return vectorContainerName('weaviate', collection);
  }

  checkContainer(container: string): void {
    if (!NAME.test(container)) {
      throw new VectorStoreInputError(
        `'${container}' is not a Weaviate class name: PascalCase, a capital letter then letters, digits or _`,
      );
    }
  }

  async probe(signal?: AbortSignal): Promise<void> {
    await this.conn.call(async (c) => void (await c.classes(signal)));
  }

  async exists(container: string): Promise<boolean> {
    this.checkContainer(container);
    return (await this.conn.call((c) => c.schema(container))) !== null;
  }

  async dimension(container: string): Promise<number | null> {
    this.checkContainer(container);
    const found = await this.conn.call((c) => c.schema(container));
    if (!found) return null;
    const m = DIMENSION.exec(found.description ?? '');
    return m ? Number(m[1]) : 0;
  }

  async ensure(container: string, dimension: number, mark?: string): Promise<{ created: boolean }> {
    const existing = await this.dimension(container);
    if (existing !== null) {
      if (existing > 0 && existing !== dimension) {
        throw new VectorDimensionMismatch('weaviate', container, existing, dimension);
      }
      return { created: false };
    }
    try {
      await this.conn.call((c) =>
        c.create({
          class: container,
          description: `tapyard dimension=${dimension}${mark === undefined ? '' : `\n${creationMarkText(mark)}`}`,
          vectorConfig: {
            [VECTOR]: {
              vectorizer: { none: {} },
              vectorIndexType: 'hnsw',
              vectorIndexConfig: { distance: 'cosine' },
            },
          },
          properties: [
            {
              name: 'text',
              dataType: ['text'],
              tokenization: 'field',
              indexFilterable: false,
              indexSearchable: false,
            },
            { name: `${PREFIX}uri`, dataType: ['text'], tokenization: 'field' },
          ],
        }),
      );
    } catch (err) {
      // Created meanwhile by another job: take it as it is.
      if (err instanceof WeaviateAnswerError && /already exists/i.test(err.message)) {
        return this.ensure(container, dimension, mark);
      }
      throw err;
    }
    return { created: true };
  }

  async creationMark(container: string): Promise<string | null> {
    this.checkContainer(container);
    const description = (await this.conn.call((c) => c.schema(container)))?.description ?? '';
    // The dimension's line comes first: only the rest of the description is read as the mark.
    const newline = description.indexOf('\n');
    return newline < 0 ? null : creationMarkOf(description.slice(newline + 1));
  }

  async chunkIds(container: string, uri: string): Promise<string[]> {
    await this.existing(container);
    const ids: string[] = [];
    // Weaviate's cursor (`after`) takes no filter: pages go by id, in id order.
    for (;;) {
      const last = ids[ids.length - 1];
      const conditions = [
        weaviateCondition(`${PREFIX}uri`, 'text', uri),
        ...(last ? [`{path: ["id"], operator: GreaterThan, valueText: ${graphqlLiteral(last)}}`] : []),
      ];
      const rows = await this.conn.call((c) =>
        c.get(
          container,
          `{ Get { ${container}(where: ${weaviateWhere(conditions)}, sort: [{path: ["_id"], order: asc}], limit: ${PAGE}) ` +
            '{ _additional { id } } } }',
        ),
      );
      ids.push(...rows.map((r) => idOf(r)));
      if (rows.length < PAGE) return ids;
    }
  }

  async upsert(container: string, chunks: ChunkRecord[]): Promise<void> {
    const found = await this.existing(container);
    await this.declare(container, found, chunks);
    const vector = namedVector(found);
    for (let i = 0; i < chunks.length; i += BATCH) {
      const batch: WeaviateObject[] = chunks.slice(i, i + BATCH).map((c) => ({
        class: container,
        id: c.id,
        properties: {
          text: c.text,
          ...Object.fromEntries(Object.entries(c.metadata).map(([k, v]) => [PREFIX + k, v])),
        },
        ...(vector ? { vectors: { [vector]: Array.from(c.vector) } } : { vector: Array.from(c.vector) }),
      }));
      // A batch write replaces an object of the same id (an upsert in Weaviate).
      const refused = await this.conn.call((c) => c.batch(batch));
      if (refused.length > 0) throw new Error(`weaviate refused ${refused.length} chunks: ${refused[0]}`);
    }
  }

  async delete(container: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.existing(container);
    for (let i = 0; i < ids.length; i += BATCH) {
      const batch = ids.slice(i, i + BATCH);
      await this.conn.call((c) =>
        c.deleteWhere(container, { path: ['id'], operator: 'ContainsAny', valueTextArray: batch }),
      );
    }
  }

  async search(
    container: string,
    vector: Float32Array,
    topK: number,
    filter?: MetadataFilter,
  ): Promise<SearchHit[]> {
    if (!Number.isInteger(topK) || topK < 1)
      throw new VectorStoreInputError('topK must be a positive integer');
    if (!vector.every((x) => Number.isFinite(x))) {
      throw new VectorStoreInputError('the query vector holds a value that is not a finite number');
    }
    const found = await this.existing(container);
    const known = propertiesOf(found);
    const entries = Object.entries(filter ?? {});
    // A condition on a key no chunk ever had, or on none of no values, matches nothing (Weaviate
    // would refuse the filter).
    if (entries.some(([k, v]) => !known.has(PREFIX + k) || (Array.isArray(v) && v.length === 0))) return [];
    const conditions = entries.map(([k, v]) => weaviateCondition(PREFIX + k, known.get(PREFIX + k) ?? '', v));
    const target = namedVector(found);
    const args = [
      `nearVector: {vector: [${Array.from(vector).join(', ')}]` +
        `${target ? `, targetVectors: [${JSON.stringify(target)}]` : ''}}`,
      `limit: ${topK}`,
      ...(conditions.length ? [`where: ${weaviateWhere(conditions)}`] : []),
    ];
    const returned = [...known.keys()].filter((p) => p === 'text' || p.startsWith(PREFIX));
    const rows = await this.conn.call((c) =>
      c.get(
        container,
        `{ Get { ${container}(${args.join(', ')}) { ${returned.join(' ')} _additional { id distance } } } }`,
      ),
    );
    return rows.map((row) => {
      const metadata: ChunkMetadata = {};
      for (const [k, v] of Object.entries(row)) {
        if (k.startsWith(PREFIX) && v !== null && v !== undefined) {
          metadata[k.slice(PREFIX.length)] = v as MetadataValue;
        }
      }
      const distance = (row._additional as { distance?: number } | undefined)?.distance;
      return {
        id: idOf(row),
        text: String(row.text ?? ''),
        metadata,
        similarity: 1 - (typeof distance === 'number' ? distance : 1),
      };
    });
  }

  async list(): Promise<string[]> {
    return this.conn.call(async (c) => (await c.classes()).map((x) => x.class));
  }

  async drop(container: string): Promise<boolean> {
    this.checkContainer(container);
    return this.conn.call(async (c) => {
      if (!(await c.schema(container))) return false;
      await c.drop(container);
      return true;
    });
  }

  async close(): Promise<void> {
    await this.conn.close();
  }

  /** The class of `container`, as Weaviate describes it now; VectorContainerMissing when it has none. */
  private async existing(container: string): Promise<WeaviateClass> {
    this.checkContainer(container);
    const found = await this.conn.call((c) => c.schema(container));
    if (!found) throw new VectorContainerMissing('weaviate', container);
    return found;
  }

  /** Declares the metadata keys the class does not have yet, typed by their first value. */
  private async declare(container: string, found: WeaviateClass, chunks: ChunkRecord[]): Promise<void> {
    const known = propertiesOf(found);
    const wanted = new Map<string, Kind>();
    for (const c of chunks) {
      for (const [k, v] of Object.entries(c.metadata)) {
        const name = PREFIX + k;
        if (!known.has(name) && !wanted.has(name)) {
          wanted.set(name, typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : 'text');
        }
      }
    }
    for (const [name, kind] of wanted) {
      await this.conn.call(async (c) => {
        try {
          await c.addProperty(
            container,
            kind === 'text'
              ? { name, dataType: ['text'], tokenization: 'field' }
              : { name, dataType: [kind] },
          );
        } catch (err) {
          // Another job declared it first.
          if (!(err instanceof WeaviateAnswerError && /already (exists|in use)/i.test(err.message)))
            throw err;
        }
      });
    }
  }
}

/** Each property's data type (`text`, `number`, `int`, `boolean`...), by name. */
function propertiesOf(found: WeaviateClass): Map<string, string> {
  return new Map((found.properties ?? []).map((p) => [p.name, p.dataType?.[0] ?? '']));
}

/** The named vector chunks go into (Tapyard's `default`), or null for a class of one unnamed vector. */
function namedVector(found: WeaviateClass): string | null {
  const names = Object.keys(found.vectorConfig ?? {});
  return names.includes(VECTOR) ? VECTOR : (names[0] ?? null);
}

function idOf(row: Record<string, unknown>): string {
  return String((row._additional as { id?: unknown } | undefined)?.id ?? '');
}

export const weaviateStore = (fields: Record<string, string>, policy: EgressPolicy): VectorStore =>
  new WeaviateStore(fields, policy);
