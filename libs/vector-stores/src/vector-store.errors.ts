import {
  DomainCode,
  NotFoundError,
  PlainTextValidationError,
  ServiceUnavailableError,
  ValidationError,
} from '@tapyard/core';

/** The domain codes of vector-store errors: the error body's `code`. */
export const VectorStoreErrorCode = {
  /** A search or delete names a container (collection, class, table) the store does not have. */
  CollectionMissing: 'vector_store.collection_missing',
  /** The container holds vectors of another dimension than the configured embedding model's. */
  DimensionMismatch: 'vector_store.dimension_mismatch',
  /** The container was filled by another embedding model. */
  ModelMismatch: 'vector_store.model_mismatch',
  /** A request value the store cannot take: an unknown store, a container name, a filter. */
  InvalidRequest: 'vector_store.invalid_request',
  /** No secret (nor, for pgvector, PGVECTOR_URL) configures the store in the environment. */
  NotConfigured: 'vector_store.not_configured',
  /** The store cannot be reached now, or its address is refused by the egress policy. */
  Unavailable: 'vector_store.unavailable',
} as const satisfies Record<string, DomainCode>;

/** 503 naming the store when it cannot be reached (or its address is not allowed). */
export function storeUnavailable(store: string, message: string): ServiceUnavailableError {
  return new ServiceUnavailableError(store, message).coded(VectorStoreErrorCode.Unavailable);
}

/** The container a search or delete names does not exist in that store. */
export class VectorContainerMissing extends NotFoundError {
  override domainCode: DomainCode = VectorStoreErrorCode.CollectionMissing;
  constructor(
    readonly store: string,
    readonly container: string,
  ) {
    super(`${store} has no container '${container}'`);
  }
}

/**
 * Vectors of one dimension meet a container of another: the embedding provider or model changed
 * between ingest and query (spec: 400, plain text).
 */
export class VectorDimensionMismatch extends PlainTextValidationError {
  override domainCode: DomainCode = VectorStoreErrorCode.DimensionMismatch;
  constructor(
    readonly store: string,
    readonly container: string,
    readonly expected: number,
    readonly actual: number,
  ) {
    super(
      `${store} container '${container}' holds vectors of dimension ${expected}, but the configured ` +
        `embedding model produces ${actual}: the embedding provider or model changed since it was loaded`,
    );
  }
}

/** A request value a store cannot take (a container name outside its naming rules, a filter key). */
export class VectorStoreInputError extends ValidationError {
  override domainCode: DomainCode = VectorStoreErrorCode.InvalidRequest;
}

/**
 * A container filled by one embedding model, loaded or searched with another: even at the same
 * dimension their vectors are not comparable. Refused; the fix is a new collection, or dropping this
 * one (`DELETE /pipeline?deleteData=true`) and loading again.
 */
export class VectorModelMismatch extends PlainTextValidationError {
  override domainCode: DomainCode = VectorStoreErrorCode.ModelMismatch;
  constructor(store: string, container: string, had: string, now: string) {
    super(
      `${store} container '${container}' holds vectors of the embedding model ${had}, but the configured model is ${now}: ` +
        'load into a new collection, or drop this one and load its documents again',
    );
  }
}
