// First: every module loaded after this is compiled once per host, then read from the cache (a third
// less CPU to start a process; the cache lives in the OS temp directory or NODE_COMPILE_CACHE).
import './compile-cache';
import 'reflect-metadata';
import { DynamicModule } from '@nestjs/common';
import {
  ConfigError,
  createLogger,
  errorMessage,
  exitGracefullyOnSignals,
  loadConfig,
  surviveUncaughtErrors,
} from '@tapyard/core';
import { createWorkerApp } from './bootstrap';
import { WorkerDrain } from './worker-drain';

/** How long closing may take once the grace is over, before the process exits 1. */
const CLOSE_MARGIN_MS = 15_000;

async function main(extra: DynamicModule[]): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker');
  surviveUncaughtErrors(logger);
  const app = await createWorkerApp(config, logger, extra);
  const drain = app.get(WorkerDrain);
  exitGracefullyOnSignals(
    async () => {
      // Jobs handed back would keep running here until exit: leave now, before closing anything
      // could make them record a failure that is not theirs.
      if ((await drain.drain()) === 'handed-back') return;
      await app.close();
    },
    logger,
    // The grace, then time to hand jobs back or close connections.
    config.shutdownGraceMs + CLOSE_MARGIN_MS,
  );
  await app.init();
  logger.info(
    { environment: config.environment, concurrency: config.worker.concurrency },
    'Tapyard worker ready',
  );
}

/**
 * The worker process: runs until a signal ends it, or exits 1 saying why it could not start. `extra`
 * as for WorkerModule.forRoot: the test worker (test/support/test-worker.ts) starts the same process
 * with its hooks.
 */
export function runWorker(extra: DynamicModule[] = []): void {
  main(extra).catch((err: unknown) => {
    console.error(
      err instanceof ConfigError ? err.message : `tapyard worker failed to start: ${errorMessage(err)}`,
    );
    process.exit(1);
  });
}

if (require.main === module) runWorker();
