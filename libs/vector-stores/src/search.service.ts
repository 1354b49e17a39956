import { Injectable } from '@nestjs/common';
import { EmbeddingsService } from '@tapyard/embeddings';
import type { VectorStoreName } from '@tapyard/pipelines';
import { VectorContainers } from './vector-containers';
import { METADATA_KEY, MetadataFilter, MetadataValue, SearchHit } from './vector-store';
import { VectorStoreInputError } from './vector-store.errors';
import { VectorStoresService } from './vector-stores.service';

export interface SearchRequest {
  query: string;
  topK: number;
  filter?: Record<string, unknown>;
  /** The store's own container name (already taken from the store's request field). */
  container: string;
}

export interface SearchResult {
  id: string;
  text: string;
  metadata: SearchHit['metadata'];
  /** (1 + cosine similarity) / 2: 0–1, higher is more similar, the same in every store. */
  _score: number;
}

const MAX_FILTER_KEYS = 20;
const MAX_FILTER_VALUES = 100;

/**
 * `POST /search/{store}`: the query embedded by the environment's embedding model (the one that filled
 * the container, or refused), then the store's nearest chunks, scored alike across stores.
 */
@Injectable()
export class SearchService {
  constructor(
    private readonly stores: VectorStoresService,
    private readonly containers: VectorContainers,
    private readonly embeddings: EmbeddingsService,
  ) {}

  async search(
    environment: string,
    name: VectorStoreName,
    req: SearchRequest,
  ): Promise<{ results: SearchResult[] }> {
    const filter = checkFilter(req.filter);
    const store = await this.stores.get(environment, name);
    store.checkContainer(req.container);
    const embedder = await this.embeddings.forEnvironment(environment);
    await this.containers.checkQuery(environment, store, req.container, {
      model: embedder.model,
      dimension: embedder.dimension,
    });
    const [vector] = await embedder.embed([req.query]);
    const hits = await store.search(req.container, vector, req.topK, filter);
    return {
      results: hits.map((h) => ({
        id: h.id,
        text: h.text,
        metadata: h.metadata,
        _score: Math.min(1, Math.max(0, (1 + h.similarity) / 2)),
      })),
    };
  }
}

/** Every key filterable in every store, every value a scalar or a short list of them. */
export function checkFilter(raw: Record<string, unknown> | undefined): MetadataFilter | undefined {
  if (raw === undefined || raw === null) return undefined;
  const entries = Object.entries(raw);
  if (entries.length > MAX_FILTER_KEYS)
    throw new VectorStoreInputError(`filter has more than ${MAX_FILTER_KEYS} keys`);
  const out: MetadataFilter = {};
  for (const [key, value] of entries) {
    if (!METADATA_KEY.test(key)) {
      throw new VectorStoreInputError(
        `filter key '${key.slice(0, 80)}' is not a metadata key (1-64 letters, digits or _, not starting with a digit)`,
      );
    }
    const values = Array.isArray(value) ? value : [value];
    if (values.length === 0 || values.length > MAX_FILTER_VALUES) {
      throw new VectorStoreInputError(`filter '${key}' needs 1 to ${MAX_FILTER_VALUES} values`);
    }
    for (const v of values) {
      if (!isScalar(v)) {
        throw new VectorStoreInputError(
          `filter '${key}' takes a string, a number, a boolean or a list of them`,
        );
      }
    }
    out[key] = Array.isArray(value) ? (value as MetadataValue[]) : (value as MetadataValue);
  }
  return out;
}

function isScalar(v: unknown): v is MetadataValue {
  return typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}
