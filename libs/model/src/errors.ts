/** Field-level validation problem, reported as `details` in the error body. */
export interface ErrorDetail {
  field: string;
  problem: string;
}

/**
 * A domain error code, `<domain>.<what>` (`pipeline.not_found`), for clients and tests to match instead
 * of the English message. Each domain declares its codes in a const object beside its errors
 * (PipelineErrorCode, SecretErrorCode...); a code, once published, keeps its meaning.
 */
export type DomainCode = `${string}.${string}`;

/** The HTTP class of each status Tapyard answers with: the body's `code` where no domain code is set. */
export const HTTP_CLASS_CODES = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
  500: 'internal',
  501: 'not_implemented',
  502: 'upstream_failed',
  503: 'service_unavailable',
} as const;

/** The body's `code` for an answer no TapyardError describes (routing, body parsing, DTO validation). */
export function httpClassCode(status: number): string {
  return (HTTP_CLASS_CODES as Record<number, string>)[status] ?? 'request_failed';
}

/**
 * Base of every domain error. Domain code throws these; one exception filter maps them to HTTP.
 * `message` must be one sentence naming the offending input and must never carry a secret value.
 */
export abstract class TapyardError extends Error {
  abstract readonly status: number;
  /** The HTTP class (validation_failed, not_found...). */
  abstract readonly code: string;
  /** What went wrong in its domain's words; set by a subclass or with `coded`. */
  domainCode?: DomainCode;
  constructor(
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
    this.name = new.target.name;
  }

  /** Tags the error with its domain code: `throw new ConflictError('…').coded(AuthErrorCode.UserExists)`. */
  coded(code: DomainCode): this {
    this.domainCode = code;
    return this;
  }
}

export class ValidationError extends TapyardError {
  readonly status = 400;
  readonly code = HTTP_CLASS_CODES[400];
}

/** A 400 answered with the message as text/plain (spec: search failures such as a dimension mismatch). */
export class PlainTextValidationError extends ValidationError {}

/** Missing, unknown, rotated-out or revoked credentials (when authentication is on). */
export class UnauthorizedError extends TapyardError {
  readonly status = 401;
  readonly code = HTTP_CLASS_CODES[401];
}

/** The caller is known but lacks the capability (enforcing mode), or failed the CSRF check. */
export class ForbiddenError extends TapyardError {
  readonly status = 403;
  readonly code = HTTP_CLASS_CODES[403];
}

export class NotFoundError extends TapyardError {
  readonly status = 404;
  readonly code = HTTP_CLASS_CODES[404];
}

export class ConflictError extends TapyardError {
  readonly status = 409;
  readonly code = HTTP_CLASS_CODES[409];
}

export class PayloadTooLargeError extends TapyardError {
  readonly status = 413;
  readonly code = HTTP_CLASS_CODES[413];
}

export class UnsupportedMediaTypeError extends TapyardError {
  readonly status = 415;
  readonly code = HTTP_CLASS_CODES[415];
}

export class UnprocessableError extends TapyardError {
  readonly status = 422;
  readonly code = HTTP_CLASS_CODES[422];
}

export class RateLimitedError extends TapyardError {
  readonly status = 429;
  readonly code = HTTP_CLASS_CODES[429];
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
  readonly code = HTTP_CLASS_CODES[501];
}

export class UpstreamError extends TapyardError {
  readonly status = 502;
  readonly code = HTTP_CLASS_CODES[502];
}

/** A required backing service (Postgres, Redis, object store, LLM provider) is down or not configured. */
export class ServiceUnavailableError extends TapyardError {
  readonly status = 503;
  readonly code = HTTP_CLASS_CODES[503];
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
  readonly code = HTTP_CLASS_CODES[500];
}
