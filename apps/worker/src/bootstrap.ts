import { DynamicModule, INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'pino';
import { PinoNestLogger, TapyardConfig } from '@tapyard/core';
import { WorkerModule } from './worker.module';

/** An HTTP-less application context running the queue processors; `extra` as for WorkerModule.forRoot. */
export async function createWorkerApp(
  config: TapyardConfig,
  logger: Logger,
  extra: DynamicModule[] = [],
): Promise<INestApplicationContext> {
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config, logger, extra), {
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  return app;
}
