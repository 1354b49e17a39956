import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Logger } from 'pino';
import { LOGGER, errorMessage } from '@tapyard/core';
import { DESTINATIONS, DestinationRegistry, PostgresDestination } from '@tapyard/destinations';

/**
 * At worker start, settles the COPY streams that loads left prepared on the PostgreSQL destination
 * server when their worker died between PREPARE and COMMIT PREPARED: a prepared transaction holds
 * its locks and rows until someone ends it, and the job's next delivery (which also settles them)
 * may never come, e.g. when it had already failed for another reason. The ledger decides each, so
 * any number of workers may sweep at once.
 */
@Injectable()
export class PreparedSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private running: Promise<void> | null = null;

  constructor(
    @Inject(DESTINATIONS) private readonly destinations: DestinationRegistry,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    const postgres = [...this.destinations.values()].find((d) => d instanceof PostgresDestination);
    if (!(postgres instanceof PostgresDestination)) return;
    // In the background: a destination server that is down must not hold the worker's start.
    this.running = postgres.sweepPrepared().then(
      (found) => {
        if (found > 0) this.logger.info({ found }, 'settled COPY streams left prepared by an earlier worker');
      },
      (err: unknown) => this.logger.warn({ err: errorMessage(err) }, 'sweep of prepared COPY streams failed'),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.running;
  }
}
