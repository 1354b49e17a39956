import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import type { Request } from 'express';
import { Observable } from 'rxjs';
import { UnsupportedMediaTypeError, ValidationError } from '@tapyard/core';

/**
 * A route that reads a JSON body (a `@Body()` parameter) refuses bytes sent under another content
 * type (415). Only `application/json` is parsed: anything else reaches the route as an empty body,
 * whose 400 would name the first missing field ("name must be ...") instead of the real mistake,
 * typically `curl -d` sending JSON as a form. Every such body is an object: an array or a bare value
 * is a 400 saying so, not a list of the object's missing properties.
 */
@Injectable()
export class JsonBodyInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() === 'http' && readsBody(context)) {
      const req = context.switchToHttp().getRequest<Request>();
      if (carriesBytes(req) && req.is('application/json') !== 'application/json') {
        const sent = String(req.headers['content-type'] ?? '').slice(0, 80);
        throw new UnsupportedMediaTypeError(
          sent
            ? `request body must be JSON sent as content-type: application/json (got '${sent}')`
            : 'request body must be JSON sent as content-type: application/json (the request has no content-type)',
        );
      }
      const body: unknown = req.body;
      if (carriesBytes(req) && (typeof body !== 'object' || body === null || Array.isArray(body))) {
        throw new ValidationError(
          `request body must be a JSON object (got ${Array.isArray(body) ? 'an array' : 'a bare value'})`,
        );
      }
    }
    return next.handle();
  }
}

function readsBody(context: ExecutionContext): boolean {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), context.getHandler().name) ??
    {}) as Record<string, unknown>;
  return Object.keys(args).some((key) => key.split(':')[0] === String(RouteParamtypes.BODY));
}

/** A body with a length, or a chunked one; a POST without a body is validated as `{}` like before. */
function carriesBytes(req: Request): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}
