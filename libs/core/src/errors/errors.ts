/** Field-level validation problem, reported as `details` in the error body. */
export interface ErrorDetail {
  field: string;
  problem: string;
}

/**
 * Base of every domain error. Domain code throws these; one exception filter maps them to HTTP.
 * `message` must be one sentence naming the offending input and must never carry a secret value.
 */
export abstract class TapyardError extends Error {
  abstract readonly status: number;
  abstract readonly code: string;
  constructor(
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationError extends TapyardError {
  readonly status = 400;
  readonly code = 'validation_failed';
}

/** A 400 answered with the message as text/plain (spec: search failures such as a dimension mismatch). */
export class PlainTextValidationError extends ValidationError {}

/** Missing, unknown, rotated-out or revoked credentials (when authentication is on). */
export class UnauthorizedError extends TapyardError {
  readonly status = 401;
  readonly code = 'unauthorized';
}

/** The caller is known but lacks the capability (enforcing mode), or failed the CSRF check. */
export class ForbiddenError extends TapyardError {
  readonly status = 403;
  readonly code = 'forbidden';
}

export class NotFoundError extends TapyardError {
  readonly status = 404;
  readonly code = 'not_found';
}

export class ConflictError extends TapyardError {
  readonly status = 409;
  readonly code = 'conflict';
}

export class PayloadTooLargeError extends TapyardError {
  readonly status = 413;
  readonly code = 'payload_too_large';
}

export class UnsupportedMediaTypeError extends TapyardError {
  readonly status = 415;
  readonly code = 'unsupported_media_type';
}

export class UnprocessableError extends TapyardError {
  readonly status = 422;
  readonly code = 'unprocessable';
}

export class RateLimitedError extends TapyardError {
  readonly status = 429;
  readonly code = 'rate_limited';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** A documented capability this release does not have yet (the message says which issue brings it). */
export class NotImplementedError extends TapyardError {
  readonly status = 501;
  readonly code = 'not_implemented';
}

export class UpstreamError extends TapyardError {
  readonly status = 502;
  readonly code = 'upstream_failed';
}

/** A required backing service (Postgres, Redis, object store, LLM provider) is down or not configured. */
export class ServiceUnavailableError extends TapyardError {
  readonly status = 503;
  readonly code = 'service_unavailable';
  constructor(
    readonly service: string,
    message: string,
  ) {
    super(message);
  }
}

/** Something we cannot explain to the caller; the filter answers 500 without the message. */
export class InternalError extends TapyardError {
  readonly status = 500;
  readonly code = 'internal';
}
