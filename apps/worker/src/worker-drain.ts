import { Inject, Injectable } from '@nestjs/common';
import { Job, Queue, Worker } from 'bullmq';
import { Logger } from 'pino';
import { CONFIG, LOGGER, ShutdownState, TapyardConfig, errorMessage } from '@tapyard/core';
import { InFlightJobs } from './in-flight';
import { IngestProcessor } from './ingest.processor';
import { MaintenanceProcessor } from './maintenance.processor';
import { RawBucketPoller } from './raw-bucket-poller';
import { TapScheduler } from './tap-scheduler';
import { TenantWorkers } from './tenant-workers';
import { WorkerMetrics } from './worker-metrics';

/** How long stopped tap runs may take to record their end before their fire times are given back. */
const TAP_HAND_BACK_MS = 5_000;

/** `finished`: everything ended within the grace; `handed-back`: running jobs went back to their queue. */
export type DrainOutcome = 'finished' | 'handed-back';

/**
 * A worker's shutdown before its application closes: readiness goes 503, no new job, tap fire or
 * raw-bucket poll starts, and what runs gets SHUTDOWN_GRACE_SECONDS to finish. Jobs still running at
 * the deadline are moved back to the head of their queue, lock released and no delivery spent, so
 * another worker takes them at once rather than after the lock expires. Their work in this process
 * is dropped with the process (loads are exactly-once: an uncommitted transaction rolls back).
 * Scheduled tap runs still running are stopped (each ends `error` saying why, nothing of it loaded) and
 * their fire times given back, so the next worker polling runs them at once.
 */
@Injectable()
export class WorkerDrain {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly shutdown: ShutdownState,
    private readonly inFlight: InFlightJobs,
    private readonly ingest: IngestProcessor,
    private readonly maintenance: MaintenanceProcessor,
    private readonly tenants: TenantWorkers,
    private readonly scheduler: TapScheduler,
    private readonly poller: RawBucketPoller,
    private readonly metrics: WorkerMetrics,
  ) {}

  /** Whether this worker takes jobs: not shutting down, and every queue consumer running. */
  get taking(): boolean {
    return !this.shutdown.draining && this.consumers().every((w) => w.isRunning());
  }

  async drain(): Promise<DrainOutcome> {
    this.shutdown.begin();
    this.scheduler.stop();
    this.tenants.stopScanning();
    const workers = this.consumers();
    await Promise.all(workers.map((w) => w.pause(true)));
    // After the pause: a job a pending fetch still hands over is refused its place too.
    this.ingest.stopTakingLargeJobs();
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.config.shutdownGraceMs);
    });
    const settled = Promise.all([this.inFlight.idle(), this.scheduler.idle(), this.poller.stop()]).then(
      () => 'settled' as const,
    );
    const outcome = await Promise.race([settled, graceOver]);
    clearTimeout(timer);
    if (outcome === 'settled') return 'finished';

    // Stop the consumers for good first: a paused worker still takes the job a pending fetch wakes
    // up for, so a job moved back would be taken again here, by a process about to exit.
    await Promise.all(workers.map((w) => w.close(true).catch(() => undefined)));
    const held = this.inFlight.held();
    const tapRuns = this.scheduler.handBack(TAP_HAND_BACK_MS);
    // Their connections are closed: the moves go through connections of their own.
    const queues = new Map<string, Queue>();
    const moved = await Promise.allSettled(
      held.map(async ({ job, token }) => {
        const key = `${job.prefix}:${job.queueName}`;
        let queue = queues.get(key);
        if (!queue) {
          queue = new Queue(job.queueName, {
            connection: { url: this.config.redis.url, maxRetriesPerRequest: null },
            prefix: job.prefix,
          });
          queues.set(key, queue);
        }
        const current = job.id === undefined ? undefined : await Job.fromId(queue, job.id);
        if (!current) throw new Error(`job ${job.queueName} ended before its move`);
        await current.moveToWait(token);
        this.metrics.handedBack.inc({ queue: job.queueName });
      }),
    );
    await Promise.all([...queues.values()].map((q) => q.close().catch(() => undefined)));
    const tapRunsHandedBack = await tapRuns;
    const failed = moved.flatMap((m) => (m.status === 'rejected' ? [errorMessage(m.reason)] : []));
    this.logger.warn(
      {
        graceSeconds: this.config.shutdownGraceMs / 1000,
        handedBack: held.length - failed.length,
        // A job that ended just before its move cannot be moved: nothing is lost.
        notMoved: failed,
        tapRunsHandedBack,
      },
      'shutdown grace over: running jobs handed back to their queue',
    );
    return 'handed-back';
  }

  private consumers(): Worker[] {
    return [this.ingest.worker, this.maintenance.worker, ...this.tenants.consumers];
  }
}
