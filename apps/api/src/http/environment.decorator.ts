import { ExecutionContext, createParamDecorator } from '@nestjs/common';
import { TapyardRequest } from './request-context';

/** The environment the request acts in (TAPYARD_ENV; per tenant in multi-tenant mode). */
export const RequestEnvironment = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): string =>
    ctx.switchToHttp().getRequest<TapyardRequest>().environment,
);
