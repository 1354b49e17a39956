import { WorkerHost } from '@nestjs/bullmq';
import { OnApplicationBootstrap } from '@nestjs/common';
import { TapyardConfig } from '@tapyard/core';

/**
 * A WorkerHost whose BullMQ worker takes its settings from the validated config rather than from
 * decorator literals. Processors declare `@Processor(queue, { autorun: false })`; the worker starts
 * here, once configured. `lockMs` bounds how long a crashed worker's job waits before another
 * worker takes it over (stalled-job recovery).
 */
export abstract class ConfiguredWorkerHost extends WorkerHost implements OnApplicationBootstrap {
  protected abstract readonly config: TapyardConfig;

  onApplicationBootstrap(): void {
    const opts = this.worker.opts as {
      lockDuration?: number;
      lockRenewTime?: number;
      stalledInterval?: number;
      maxStalledCount?: number;
    };
    opts.lockDuration = this.config.worker.lockMs;
    opts.lockRenewTime = this.config.worker.lockMs / 2;
    opts.stalledInterval = this.config.worker.lockMs;
    opts.maxStalledCount = this.config.worker.maxStalls;
    // The lock manager copies its timings when the Worker is constructed (with the decorator's
    // defaults): rebuild it, or locks would expire before their first renewal whenever lockMs is
    // below BullMQ's 30 s default.
    (this.worker as unknown as { createLockManager(): void }).createLockManager();
    this.worker.concurrency = this.config.worker.concurrency;
    void this.worker.run();
  }
}
