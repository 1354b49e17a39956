// First: every module loaded after this is compiled once per host, then read from the cache (a third
// less CPU to start a process; the cache lives in the OS temp directory or NODE_COMPILE_CACHE).
import './compile-cache';
import 'reflect-metadata';
import type { Server } from 'node:http';
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

/** How long an idle keep-alive connection stays open (see main). */
const KEEP_ALIVE_MS = 65_000;

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'api');
  surviveUncaughtErrors(logger);
  const app = await createApiApp(config, logger);
  const shutdown = app.get(ShutdownState);
  // Node closes an idle keep-alive connection after 5 s. A client or proxy about to reuse it races
  // that close, and a request written as it happens fails with EPIPE or ECONNRESET (seen from a busy
  // client). Longer than the 60 s idle timeout of common load balancers, so a proxy in front never
  // reuses a connection the API is closing; headers must be allowed as long.
  const server = app.getHttpServer() as Server;
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = KEEP_ALIVE_MS + 1_000;
  // Past the grace, requests still running are cut and the process exits 1.
  exitGracefullyOnSignals(
    () => {
      shutdown.begin();
      const closing = app.close();
      // close() ends only the connections idle at that moment; one whose request finishes later
      // would otherwise stay open for its keep-alive time.
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      return closing.finally(() => clearInterval(sweep));
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
