import 'reflect-metadata';
import {
  ConfigError,
  createLogger,
  errorMessage,
  exitGracefullyOnSignals,
  loadConfig,
  surviveUncaughtErrors,
} from '@tapyard/core';
import { createWorkerApp } from './bootstrap';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker');
  surviveUncaughtErrors(logger);
  const app = await createWorkerApp(config, logger);
  exitGracefullyOnSignals(() => app.close(), logger, config.shutdownTimeoutMs);
  await app.init();
  logger.info(
    { environment: config.environment, concurrency: config.worker.concurrency },
    'Tapyard worker ready',
  );
}

main().catch((err: unknown) => {
  console.error(
    err instanceof ConfigError ? err.message : `tapyard worker failed to start: ${errorMessage(err)}`,
  );
  process.exit(1);
});
