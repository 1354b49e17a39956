import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import { STATUS_CODES } from 'node:http';
import type { Request, Response } from 'express';
import { Logger } from 'pino';
import {
  ErrorDetail,
  PlainTextValidationError,
  RateLimitedError,
  TapyardError,
  errorMessage,
  drainRequest,
  httpClassCode,
  isConnectionFailure,
  requestContext,
} from '@tapyard/core';

/** The contract's error body (contract addendum, "Errors"). */
export interface ErrorBody {
  statusCode: number;
  error: string;
  /** A domain code (`pipeline.not_found`) where the error has one, else the HTTP class (`not_found`). */
  code: string;
  message: string;
  details?: ErrorDetail[];
}

/**
 * The one place where errors become HTTP. Domain errors carry their status; framework errors
 * (routing, body parsing, DTO validation) are reworded to name the problem; anything else is a 500
 * whose body says only where to look, never a stack, a connection string or a secret.
 */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  constructor(private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    const body = this.toBody(exception, req);
    if (exception instanceof RateLimitedError)
      res.setHeader('Retry-After', String(exception.retryAfterSeconds));
    if (res.headersSent) {
      res.end();
      return;
    }
    // An answer sent while the client is still sending its body would be lost to a TCP reset.
    void drainRequest(req).then(() => this.send(exception, res, body));
  }

  private send(exception: unknown, res: Response, body: ErrorBody): void {
    if (res.headersSent || res.writableEnded) return;
    if (exception instanceof PlainTextValidationError) {
      res.status(400).type('text/plain').send(exception.message);
      return;
    }
    // A route may have set another content type (e.g. text/plain for upload tokens) before failing.
    res.status(body.statusCode).type('application/json').json(body);
  }

  private toBody(exception: unknown, req: Request): ErrorBody {
    if (exception instanceof TapyardError && exception.status < 500) {
      return body(exception.status, exception.message, exception.details, exception.domainCode);
    }
    if (exception instanceof TapyardError && exception.status !== 500) {
      const code = exception.domainCode ?? exception.code;
      this.logger.warn({ err: errorMessage(exception), code }, 'request failed');
      return body(exception.status, exception.message, undefined, code);
    }
    if (exception instanceof HttpException && exception.getStatus() < 500) {
      return this.fromHttpException(exception, req);
    }
    const parserError = fromBodyParserError(exception, req);
    if (parserError) return parserError;
    if (isConnectionFailure(exception)) {
      // Repositories reach only the metadata database directly; other services raise typed errors.
      this.logger.warn({ err: errorMessage(exception) }, 'metadata database unavailable');
      return body(503, 'postgres (the metadata database) is unavailable; try again shortly');
    }
    const requestId = requestContext.getStore()?.requestId ?? 'unknown';
    this.logger.error(
      { err: errorMessage(exception), stack: exception instanceof Error ? exception.stack : undefined },
      'unexpected error',
    );
    return body(500, `internal error: the server log has the details under request id ${requestId}`);
  }

  private fromHttpException(e: HttpException, req: Request): ErrorBody {
    const status = e.getStatus();
    const response = e.getResponse();
    const raw =
      typeof response === 'object' && response !== null
        ? (response as Record<string, unknown>).message
        : response;
    if (status === 404 && typeof raw === 'string' && raw.startsWith('Cannot ')) {
      return body(404, `no route ${req.method} ${req.originalUrl.split('?')[0]}`);
    }
    if (status === 413) return body(413, 'request body is larger than the configured limit (BODY_LIMIT)');
    if (status === 400 && e.constructor.name === 'BadRequestException' && isJsonSyntax(raw)) {
      // The parser's own message quotes the input, which may hold a secret: keep only the position.
      const at = /position (\d+)/.exec(String(raw));
      return body(400, `request body is not valid JSON${at ? ` (error at position ${at[1]})` : ''}`);
    }
    return body(status, typeof raw === 'string' && raw ? raw : (STATUS_CODES[status] ?? 'request failed'));
  }
}

/** body-parser / raw-body errors (http-errors with a status, mostly a `type`) that reach us before any route. */
function fromBodyParserError(e: unknown, req: Request): ErrorBody | null {
  if (typeof e !== 'object' || e === null) return null;
  const { type, status, code, message } = e as {
    type?: unknown;
    status?: unknown;
    code?: unknown;
    message?: unknown;
  };
  if (typeof status !== 'number' || status >= 500) return null;
  const encoding = String(req.headers['content-encoding'] ?? '').slice(0, 40);
  if (typeof type !== 'string') {
    // zlib / brotli refused the body: its bytes are not what the header says.
    if (typeof code === 'string' && /^(Z_|ERR_|ERR__)/.test(code)) {
      return body(
        400,
        `request body could not be decoded: it does not match its content-encoding '${encoding}'`,
      );
    }
    return null;
  }
  switch (type) {
    case 'entity.too.large':
      return body(413, 'request body is larger than the configured limit (BODY_LIMIT)');
    case 'entity.parse.failed':
      return body(400, 'request body is not valid JSON');
    case 'entity.too.deep':
      return body(400, typeof message === 'string' ? message : 'request body is nested too deeply');
    case 'entity.nul':
      return body(400, typeof message === 'string' ? message : 'request body holds a NUL character');
    case 'encoding.unsupported':
      // A single token names a coding we do not speak (415); anything else is not a header value at all.
      return /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(encoding)
        ? body(415, `content-encoding '${encoding}' is not supported (use gzip, deflate, br or none)`)
        : body(400, 'the content-encoding header is malformed');
    case 'charset.unsupported':
      return body(415, 'request body uses an unsupported charset');
    case 'request.aborted':
      return body(400, 'the client aborted the request before the body was complete');
    default:
      return body(status, 'request body could not be read');
  }
}

function isJsonSyntax(raw: unknown): boolean {
  return typeof raw === 'string' && /JSON|Unexpected token|Unexpected end|Expected/.test(raw);
}

function body(statusCode: number, message: string, details?: ErrorDetail[], code?: string): ErrorBody {
  const b: ErrorBody = {
    statusCode,
    error: STATUS_CODES[statusCode] ?? 'Error',
    code: code ?? httpClassCode(statusCode),
    message,
  };
  if (details && details.length > 0) b.details = details;
  return b;
}
