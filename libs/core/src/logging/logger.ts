import { AsyncLocalStorage } from 'node:async_hooks';
import { LoggerService } from '@nestjs/common';
import pino, { Logger } from 'pino';
import { LogLevel } from '../config/config';

export interface RequestContext {
  requestId: string;
}

/** Carries the request id to every log line written while a request is handled. */
export const requestContext = new AsyncLocalStorage<RequestContext>();

/** Field names whose values never reach a log line. */
export const REDACT_PATHS = [
  'password',
  'secret',
  'token',
  'apiKey',
  'secretKey',
  'fields',
  'masterKey',
  '*.password',
  '*.secret',
  '*.token',
  '*.apiKey',
  '*.secretKey',
  '*.fields',
  '*.masterKey',
  'headers["x-api-key"]',
  'headers.cookie',
  'headers.authorization',
];

export function createLogger(level: LogLevel, name: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      name,
      level,
      base: { app: name, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => {
        const ctx = requestContext.getStore();
        return ctx ? { reqId: ctx.requestId } : {};
      },
    },
    destination,
  );
}

/** Nest's logger interface over pino, so framework messages are JSON lines like ours. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, context?: string): void {
    this.logger.info({ component: context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error({ component: context, trace }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.logger.warn({ component: context }, String(message));
  }
  debug(message: unknown, context?: string): void {
    this.logger.debug({ component: context }, String(message));
  }
  verbose(message: unknown, context?: string): void {
    this.logger.trace({ component: context }, String(message));
  }
}
