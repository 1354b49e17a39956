import 'reflect-metadata';
import { ConfigError, createLogger, errorMessage, loadConfig } from '@tapyard/core';
import { createApiApp } from './bootstrap';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'api');
  const app = await createApiApp(config, logger);
  // In-flight requests get SHUTDOWN_TIMEOUT_MS to finish after SIGTERM/SIGINT, then we exit anyway.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => setTimeout(() => process.exit(1), config.shutdownTimeoutMs).unref());
  }
  await app.listen(config.port, config.host);
  const base = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
  logger.info({ api: `${base}/api/v1`, docs: `${base}/api/docs`, environment: config.environment }, 'Tapyard API listening');
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : `tapyard api failed to start: ${errorMessage(err)}`);
  process.exit(1);
});
