import { NotFoundError, PlainTextValidationError, ValidationError } from '@tapyard/core';

/** The container a search or delete names does not exist in that store. */
export class VectorContainerMissing extends NotFoundError {
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
export class VectorStoreInputError extends ValidationError {}

/**
 * A container filled by one embedding model, loaded or searched with another: even at the same
 * dimension their vectors are not comparable. Refused; the fix is a new collection, or dropping this
 * one (`DELETE /pipeline?deleteData=true`) and loading again.
 */
export class VectorModelMismatch extends PlainTextValidationError {
  constructor(store: string, container: string, had: string, now: string) {
    super(
      `${store} container '${container}' holds vectors of the embedding model ${had}, but the configured model is ${now}: ` +
        'load into a new collection, or drop this one and load its documents again',
    );
  }
}
