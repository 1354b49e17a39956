import { DynamicModule, Global, Module } from '@nestjs/common';
import { Logger } from 'pino';

/** Injection token for the root pino logger of the process. */
export const LOGGER = Symbol('Logger');

@Global()
@Module({})
export class LoggingModule {
  static forRoot(logger: Logger): DynamicModule {
    return { module: LoggingModule, providers: [{ provide: LOGGER, useValue: logger }], exports: [LOGGER] };
  }
}
