import type { DomainCode } from '@tapyard/core';

/** The domain codes of natural-language query errors: the error body's `code`. */
export const QueryErrorCode = {
  /** The SQL (written or given) is not one read-only statement on the allowed tables and functions. */
  UnsafeSql: 'query.unsafe_sql',
  /** Every connection for queries (QUERY_POOL_SIZE) stayed busy. */
  PoolBusy: 'query.pool_busy',
  /** The first row alone is over QUERY_MAX_RESULT_BYTES. */
  ResultTooLarge: 'query.result_too_large',
  /** A schema the query may not read, or whose tables the platform cannot grant. */
  SchemaRefused: 'query.schema_refused',
  /** The database lacks the query role (or the function that makes tenants' roles): an installation step. */
  NotInstalled: 'query.not_installed',
  /** Over QUERY_TIMEOUT_MS. */
  Timeout: 'query.timeout',
  /** The query reads something its role may not. */
  NotPermitted: 'query.not_permitted',
  /** PostgreSQL refused the query (syntax, types, constraints). */
  Failed: 'query.failed',
} as const satisfies Record<string, DomainCode>;
