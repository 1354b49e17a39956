import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { Logger } from 'pino';
import { requestContext } from '@tapyard/core';
import { ApiMetrics } from '../metrics/metrics';
import type { Access } from '@tapyard/auth';

/** A request as Tapyard middleware leaves it: with its id and the environment it acts in. */
export interface TapyardRequest extends Request {
  requestId: string;
  environment: string;
  /** Set by the access guard before any handler runs. */
  access: Access;
}

const INCOMING_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Gives each request an id (kept from `x-request-id` when the caller sent a sane one), runs the
 * rest of the request inside that context so every log line carries it, and writes one access line.
 */
export function requestContextMiddleware(logger: Logger, environment: string, metrics: ApiMetrics) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const incoming = req.header('x-request-id');
    const requestId = incoming && INCOMING_ID.test(incoming) ? incoming : randomUUID();
    const r = req as TapyardRequest;
    r.requestId = requestId;
    r.environment = environment;
    res.setHeader('x-request-id', requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
      metrics.httpDuration.observe({ method: req.method, route, status: String(res.statusCode) }, ms / 1000);
      requestContext.run({ requestId }, () =>
        logger.info(
          { method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 10) / 10 },
          'request',
        ),
      );
    });
    requestContext.run({ requestId }, () => next());
  };
}
