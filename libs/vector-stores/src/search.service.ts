import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig } from '@tapyard/core';
import { EmbeddingsService } from '@tapyard/embeddings';
import { VectorStoreName } from '@tapyard/model';
import { destinationDefaults, pgvectorSchemaRefusal, tenantSchema } from '@tapyard/pipelines';
import { SecretsService, TENANT_MAPPINGS_SECRET } from '@tapyard/secrets';
import { VectorContainers } from './vector-containers';
import { METADATA_KEY, MetadataFilter, MetadataValue, SearchHit } from './vector-store';
import { VectorContainerMissing, VectorStoreInputError } from './vector-store.errors';
import { VectorStoresService } from './vector-stores.service';

/** The request as the spec names it: the common fields and each store's container field. */
export interface SearchRequest {
  query: string;
  /** Default 5. */
  topK?: number;
  filter?: Record<string, unknown>;
  /** Qdrant, Milvus, Chroma. */
  collection?: string;
  /** Weaviate (default `Documents`). */
  className?: string;
  /** pgvector: the table, and its schema (default: where the environment's pipelines load). */
  table?: string;
  schema?: string;
}

/** Whether the caller may search the container a capability scope names (`collection=<name>`). */
export type SearchScope = (collection: string) => boolean;

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
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly stores: VectorStoresService,
    private readonly containers: VectorContainers,
    private readonly embeddings: EmbeddingsService,
    private readonly secrets: SecretsService,
  ) {}

  /**
   * A container the caller's scope does not cover is 404 like a missing one. The container is named
   * as loading names it (each store's own rule) and confined as loading is: a pgvector schema a
   * pipeline of this environment could not load into is 400 naming it. In the operator environment
   * of a multi-tenant platform a tenant's pgvector schema is reached only by a caller with full
   * access (`fullAccess`: `*:*`), as metadata and NL SQL see it; to others it is 404 like a missing one.
   */
  async search(
    environment: string,
    name: VectorStoreName,
    req: SearchRequest,
    visible: SearchScope = () => true,
    fullAccess = true,
  ): Promise<{ results: SearchResult[] }> {
    const target = this.target(environment, name, req);
    if (!visible(target.scope)) throw new VectorContainerMissing(name, target.scope);
    if (target.schema !== undefined && !fullAccess && (await this.isTenantSchema(environment, target.schema)))
      throw new VectorContainerMissing(name, target.scope);
    const filter = checkFilter(req.filter);
    const store = await this.stores.get(environment, name);
    const container = store.containerName(target.collection, target.schema);
    store.checkContainer(container);
    const embedder = await this.embeddings.forEnvironment(environment);
    await this.containers.checkQuery(environment, store, container, {
      model: embedder.model,
      dimension: embedder.dimension,
    });
    const [vector] = await embedder.embed([req.query]);
    const hits = await store.search(container, vector, req.topK ?? 5, filter);
    return {
      results: hits.map((h) => ({
        id: h.id,
        text: h.text,
        metadata: h.metadata,
        _score: Math.min(1, Math.max(0, (1 + h.similarity) / 2)),
      })),
    };
  }

  /** Whether `schema` is a tenant's, seen from the operator environment of a multi-tenant platform. */
  private async isTenantSchema(environment: string, schema: string): Promise<boolean> {
    const operator = this.config.environment;
    if (!this.config.auth.multiTenant || environment !== operator) return false;
    const mappings = (await this.secrets.readSystem(operator, TENANT_MAPPINGS_SECRET)) ?? {};
    return Object.values(mappings).some((t) => t !== operator && tenantSchema(t) === schema);
  }

  /**
   * The request's container field (spec), as capabilities scope it and as loading names it. A pgvector
   * table is scoped by its name in the environment's own schema, and as `<schema>.<table>` in another:
   * a key scoped to a table reaches it in one schema only.
   */
  private target(
    environment: string,
    name: VectorStoreName,
    req: SearchRequest,
  ): { scope: string; collection: string; schema?: string } {
    switch (name) {
      case 'weaviate': {
        const c = req.className ?? 'Documents';
        return { scope: c, collection: c };
      }
      case 'pgvector': {
        if (!req.table)
          throw new VectorStoreInputError("pgvector search needs 'table' (and optionally 'schema')");
        const own = destinationDefaults(this.config, environment).schema;
        const schema = req.schema ?? own;
        const refused = pgvectorSchemaRefusal(this.config, environment, schema);
        if (refused !== null)
          throw new VectorStoreInputError(`pgvector schema '${schema}' cannot be searched: ${refused}`);
        const scope = schema === own ? req.table : `${schema}.${req.table}`;
        return { scope, collection: req.table, schema };
      }
      default:
        if (!req.collection) throw new VectorStoreInputError(`${name} search needs 'collection'`);
        return { scope: req.collection, collection: req.collection };
    }
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
