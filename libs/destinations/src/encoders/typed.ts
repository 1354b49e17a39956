// Loaded in the stage thread: type-only imports.
import type { SchemaField, TypedBatch } from '@tapyard/model';
import type { Payload } from '../destination';

/**
 * For destinations that build their records on the main thread (documents, Parquet rows): the typed
 * batch itself, cloned across threads as a few column arrays.
 */
export function createEncoder(_columns: SchemaField[]): (batch: TypedBatch) => Payload {
  return (batch) => batch;
}
