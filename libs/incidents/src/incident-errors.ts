import type { DomainCode } from '@tapyard/core';

/** The domain codes of incident errors: the error body's `code`. */
export const IncidentErrorCode = {
  NotFound: 'incident.not_found',
  Resolved: 'incident.resolved',
  /** A script changed since the incident: nothing was restored. */
  ScriptChanged: 'incident.script_changed',
} as const satisfies Record<string, DomainCode>;
