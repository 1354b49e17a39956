import type { DomainCode } from '@tapyard/core';

/** The domain codes of destination (loader and sink) errors: the error body's `code`. */
export const DestinationErrorCode = {
  /** The pipeline has no section for the destination a load needs. */
  MissingSection: 'destination.missing_section',
  /** The destination's secret is missing, or a field of it does not fit. */
  InvalidSecret: 'destination.invalid_secret',
  /** The endpoint's address is refused by the egress policy, or is plain http without being allow-listed. */
  EndpointRefused: 'destination.endpoint_refused',
  /** A MongoDB database or collection name the server would refuse. */
  InvalidName: 'destination.invalid_name',
  /** The load does not fit the destination (too many columns, a key column that is not a column). */
  LoadRefused: 'destination.load_refused',
  /** A created table cannot be dropped now (in use, or other objects depend on it). */
  DropRefused: 'destination.drop_refused',
  /** The destination cannot be reached now, or did not answer in time. */
  Unavailable: 'destination.unavailable',
  /** The destination answered with an error. */
  UpstreamFailed: 'destination.upstream_failed',
} as const satisfies Record<string, DomainCode>;
