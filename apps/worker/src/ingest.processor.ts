import { OnWorkerEvent, Processor } from '@nestjs/bullmq';
import { Inject, OnApplicationShutdown, OnModuleDestroy } from '@nestjs/common';
import { DelayedError, Job } from 'bullmq';
import { Logger } from 'pino';
import { CONFIG, LOGGER, Places, TapyardConfig, errorMessage } from '@tapyard/core';
import { DocumentLoader } from '@tapyard/documents';
import { IngestionRunner } from '@tapyard/ingestion';
import { FileNotifier } from '@tapyard/intake';
import {
  ConfiguredWorkerHost,
  DeferLaterError,
  IngestJob,
  IngestPayload,
  InlineDrops,
  JobHandlers,
  MalformedJobError,
  QUEUES,
  ReadJob,
  dispatch,
  jobFieldsOf,
  readJob,
} from '@tapyard/queue';
import { StatusService, jobRef } from '@tapyard/status';
import { InFlightJobs } from './in-flight';

@Processor(QUEUES.ingest, { autorun: false })
export class IngestProcessor extends ConfiguredWorkerHost implements OnModuleDestroy, OnApplicationShutdown {
  /** Finished jobs' inline files leave Redis, several jobs' in one round trip. */
  private readonly drops: InlineDrops;
  /** Shared by the process's queues (its tenants' too): what it bounds is this process's memory. */
  private readonly places: Places;

  constructor(
    @Inject(CONFIG) protected readonly config: TapyardConfig,
    private readonly runner: IngestionRunner,
    private readonly notifier: FileNotifier,
    private readonly status: StatusService,
    private readonly documents: DocumentLoader,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly inFlight: InFlightJobs,
  ) {
    super();
    this.drops = new InlineDrops(config.redis.url);
    this.places = new Places(config.worker.largeJobs);
  }

  /** This process's large jobs: holding a place, and waiting for one. */
  get largeJobs(): { running: number; waiting: number } {
    return { running: this.places.running, waiting: this.places.queued };
  }

  /** A shutdown began: jobs waiting for a large job's place go back to their queue (see Places). */
  stopTakingLargeJobs(): void {
    this.places.close();
  }

  /** Closing without a drain (a signal drains first): no job waiting for a place starts any more. */
  onModuleDestroy(): void {
    this.places.close();
  }

  /** After the queues' workers stopped (their last jobs' files are dropped at once from then on). */
  async onApplicationShutdown(): Promise<void> {
    await this.drops.close();
  }

  /** One handler per ingest job (JobMap): a job without its handler does not compile. */
  private readonly handlers = {
    load: (data, job, token) => this.load(data, job, token),
    intake: (data) => this.notifier.intake(data),
    document: (data, job) =>
      this.documents.run(data, { made: job.attemptsMade, max: job.opts.attempts ?? 1 }),
  } satisfies JobHandlers<typeof QUEUES.ingest>;

  process(job: Job, token?: string): Promise<void> {
    return this.inFlight.run(job, token, () => this.handle(job, token));
  }

  private async handle(job: Job, token?: string): Promise<void> {
    // Checked before anything reads it: a job this version cannot run fails once, saying why.
    const read = readJob(QUEUES.ingest, job);
    // A redelivery of a job that already ended (a re-added payload, a second worker after a stall):
    // its outcome stands, so it loads nothing and reports nothing.
    if (
      !firstSmallLoad(job, read) &&
      (await this.status.ended(read.data.environment, read.data.pipelineToken))
    ) {
      this.logger.info(
        { jobId: job.id, name: job.name, pipelineToken: read.data.pipelineToken },
        'job already ended: this delivery is skipped',
      );
      return;
    }
    const leave = isLarge(read) ? await this.places.enter() : undefined;
    if (leave === null) {
      // Taken before the shutdown began, waiting for a place since: back to the queue at once, no
      // delivery spent, for a worker that stays.
      if (token === undefined) throw new Error('the worker is shutting down');
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }
    try {
      await dispatch(this.handlers, read, job, token);
    } finally {
      leave?.();
    }
  }

  private async load(data: IngestPayload, job: Job, token?: string): Promise<void> {
    try {
      return await this.runner.run(data, { made: job.attemptsMade, max: job.opts.attempts ?? 1 });
    } catch (err) {
      if (!(err instanceof DeferLaterError) || token === undefined) throw err;
      // Back to the queue without spending a delivery: waiting for capacity is not a failure.
      await job.updateData({ ...data, deferrals: (data.deferrals ?? 0) + 1 });
      await job.moveToDelayed(Date.now() + err.delayMs, token);
      throw new DelayedError();
    }
  }

  /** A finished job's inline file leaves Redis with it (see InlineDrops). */
  @OnWorkerEvent('completed')
  async onCompleted(job: Job): Promise<void> {
    await this.drops.drop(job);
  }

  /**
   * The runner reports its own failures; BullMQ fails a job only when workers kept dying on it
   * (stalled too often), or when it is malformed. Say so in the job's status rather than leaving it
   * `processing` until the 8-hour timeout.
   */
  @OnWorkerEvent('failed')
  async onFailed(job: Job | undefined, err: Error): Promise<void> {
    if (!job) return;
    // Failed for good (no retry left): as for a completed job.
    if (job.finishedOn !== undefined) await this.drops.drop(job);
    // A retry the runner asked for has its own status note; BullMQ runs the job again.
    if (err.name === 'RetryLaterError') return;
    if (err instanceof MalformedJobError) {
      // Not the payload: it carries tokens.
      this.logger.error(
        { jobId: job.id, queue: QUEUES.ingest, name: job.name, reason: err.message },
        'malformed job failed',
      );
      // Whoever queued it waits on its status (a version skew in a rolling deploy): end it, saying why.
      const ref = jobFieldsOf(job.data);
      if (ref === null) return;
      await this.status
        .record(ref, 'JobRunner', 'error', `the job could not be run: ${err.message}`, 'error')
        .catch(() => undefined);
      return;
    }
    await this.status
      .record(
        jobRef(job.data),
        'JobRunner',
        'error',
        `the job was abandoned after repeated worker failures: ${errorMessage(err)}`,
        'error',
      )
      .catch(() => undefined);
  }
}

/**
 * A small upload's load on its first start (BullMQ counts every start, retries and stalls included):
 * its token was made for that one request and only its own delivery ends it, so the check for an
 * ended job is skipped, a round trip and a transaction fewer per small job. Were the payload added
 * again under another queue job (nothing does), its loads would still find their committed
 * delivery (every destination is exactly-once: ledgers) and its events would be dropped as those of
 * an ended job (record_events): only the work would be repeated.
 */
function firstSmallLoad(job: Job, read: ReadJob<typeof QUEUES.ingest>): boolean {
  return job.attemptsStarted <= 1 && read.name === IngestJob.load && read.data.inline !== undefined;
}

/**
 * A job whose memory grows with its input: all but a small upload's load carried in its job (read on
 * the main thread, its file at most INLINE_UPLOAD_BYTES). Documents take a place whatever their size:
 * their parser's memory bound is per document.
 */
function isLarge(read: ReadJob<typeof QUEUES.ingest>): boolean {
  return !(read.name === IngestJob.load && read.data.inline !== undefined);
}
