// First: every module loaded after this is compiled once per host, then read from the cache (a third
// less CPU to start a process; the cache lives in the OS temp directory or NODE_COMPILE_CACHE).
import './compile-cache';
import 'reflect-metadata';
import {
  ConfigError,
  createLogger,
  errorMessage,
  exitGracefullyOnSignals,
  loadConfig,
  ShutdownState,
  surviveUncaughtErrors,
} from '@tapyard/core';
import { createApiApp } from './bootstrap';
import { consoleDirectory } from './http/console';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'api');
  surviveUncaughtErrors(logger);
  const app = await createApiApp(config, logger);
  const shutdown = app.get(ShutdownState);
  // Past the grace, requests still running are cut and the process exits 1.
  exitGracefullyOnSignals(
    () => {
      shutdown.begin();
      return app.close();
    },
    logger,
    config.shutdownGraceMs,
  );
  await app.listen(config.port, config.host);
  const base = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
  logger.info(
    {
      console: consoleDirectory(config.consoleDir) === null ? undefined : `${base}/`,
      api: `${base}/api/v1`,
      docs: config.auth.apiDocs === 'off' ? undefined : `${base}/api/docs`,
      environment: config.environment,
    },
    'Tapyard API listening',
  );
}

main().catch((err: unknown) => {
  console.error(
    err instanceof ConfigError ? err.message : `tapyard api failed to start: ${errorMessage(err)}`,
  );
  process.exit(1);
});
