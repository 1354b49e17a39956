import { Logger } from 'pino';

/**
 * Whether this process is shutting down. From the signal on, readiness answers 503 so load balancers
 * and schedulers stop sending work while what is running finishes.
 */
export class ShutdownState {
  private began = false;

  get draining(): boolean {
    return this.began;
  }

  begin(): void {
    this.began = true;
  }
}

/**
 * On SIGTERM/SIGINT: `close` drains the application (readiness 503; the HTTP server stops accepting
 * and lets in-flight requests finish; workers stop taking jobs, let running ones finish within the
 * grace and hand back the rest), then the process exits 0. Past `deadlineMs` the process exits 1:
 * a close that hangs must not keep a stopped deployment alive.
 */
export function exitGracefullyOnSignals(
  close: () => Promise<void>,
  logger: Logger,
  deadlineMs: number,
): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error({ deadlineMs }, 'shutdown timed out');
      process.exit(1);
    }, deadlineMs).unref();
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
