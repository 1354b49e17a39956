/** The error hierarchy, defined in `@tapyard/model` (pure, loaded by stage threads too); re-exported for the rest. */
export {
  HTTP_CLASS_CODES,
  httpClassCode,
  TapyardError,
  ValidationError,
  PlainTextValidationError,
  UnauthorizedError,
  ForbiddenError,
  NotFoundError,
  ConflictError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  UnprocessableError,
  RateLimitedError,
  NotImplementedError,
  UpstreamError,
  ServiceUnavailableError,
  InternalError,
} from '@tapyard/model';
export type { ErrorDetail, DomainCode } from '@tapyard/model';
