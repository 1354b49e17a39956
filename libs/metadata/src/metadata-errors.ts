import type { DomainCode } from '@tapyard/core';

/** The domain codes of metadata errors: the error body's `code` (names the caller may not see are absent too). */
export const MetadataErrorCode = {
  DatabaseNotFound: 'metadata.database_not_found',
  SchemaNotFound: 'metadata.schema_not_found',
  TableNotFound: 'metadata.table_not_found',
  /** An assistant tool call without an argument it needs. */
  InvalidRequest: 'metadata.invalid_request',
} as const satisfies Record<string, DomainCode>;
