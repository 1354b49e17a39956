import 'reflect-metadata';
import { ConfigError, createLogger, errorMessage, loadConfig } from '@tapyard/core';
import { createWorkerApp } from './bootstrap';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker');
  const app = await createWorkerApp(config, logger);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    // Jobs still running after SHUTDOWN_TIMEOUT_MS are left to BullMQ's stalled-job recovery.
    process.once(signal, () => setTimeout(() => process.exit(1), config.shutdownTimeoutMs).unref());
  }
  await app.init();
  logger.info({ environment: config.environment, concurrency: config.worker.concurrency }, 'Tapyard worker ready');
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : `tapyard worker failed to start: ${errorMessage(err)}`);
  process.exit(1);
});
