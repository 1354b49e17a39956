import { Logger } from 'pino';

/**
 * On SIGTERM/SIGINT: close the application (the HTTP server stops accepting and lets in-flight
 * requests finish; BullMQ workers stop taking jobs and let active ones finish), then exit 0.
 * Past `timeoutMs` the process exits 1; unfinished jobs go back to the queue through BullMQ's
 * stalled-job recovery.
 */
export function exitGracefullyOnSignals(close: () => Promise<void>, logger: Logger, timeoutMs: number): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown timed out');
      process.exit(1);
    }, timeoutMs).unref();
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err: err instanceof Error ? err.message : String(err) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/**
 * An error no code path caught (a stream without an `'error'` listener, a promise nobody awaited) is
 * logged and the process keeps serving: one hostile request or poison job must not take the API or
 * a worker down for everyone, nor crash-loop a worker through redelivery. Every such log line is a
 * bug to fix where it was thrown.
 */
export function surviveUncaughtErrors(logger: Logger): void {
  const report = (kind: string) => (err: unknown) => {
    logger.error(
      {
        err: err instanceof Error ? err.message : String(err),
        stack: err instanceof Error ? err.stack : undefined,
      },
      `${kind} (logged; the process keeps serving)`,
    );
  };
  process.on('uncaughtException', report('uncaught exception'));
  process.on('unhandledRejection', report('unhandled promise rejection'));
}
