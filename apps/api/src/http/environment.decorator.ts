import { ExecutionContext, createParamDecorator } from '@nestjs/common';
import type { Access } from '@tapyard/auth';
import { TapyardRequest } from './request-context';

/** The environment the request acts in (TAPYARD_ENV; per tenant in multi-tenant mode). */
export const RequestEnvironment = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): string =>
    ctx.switchToHttp().getRequest<TapyardRequest>().environment,
);

/** What the caller may see and do, for per-item checks in handlers (see Access). */
export const RequestAccess = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): Access => ctx.switchToHttp().getRequest<TapyardRequest>().access,
);

/**
 * Aborted when the client goes away before the answer is sent: long calls (model requests) pass it on
 * so the work stops with the caller.
 */
export const RequestSignal = createParamDecorator((_data: unknown, ctx: ExecutionContext): AbortSignal => {
  const res = ctx.switchToHttp().getResponse<import('express').Response>();
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  return abort.signal;
});
