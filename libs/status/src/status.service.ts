import { Inject, Injectable, Optional } from '@nestjs/common';
import { Counter, Registry } from 'prom-client';
import { ConflictError, METRICS_REGISTRY, NotFoundError, sharedMetric } from '@tapyard/core';
import { safeText } from '@tapyard/model';
import { EventRow, RecordedEvent, StatusRepository } from './status.repository';
import { StatusBatcher } from './status-batcher';
import {
  ALL_JOBS,
  CLOCK,
  Clock,
  JOB_TIMEOUT_MS,
  JobRef,
  JobRow,
  JobRows,
  JobStatus,
  JobSummary,
  JobScope,
  JobsFilter,
  ProcessName,
  RECENT_BATCH,
  RECENT_PAGE_SIZE,
  Rollup,
  RollupJob,
  RollupJobStatus,
  SUMMARY_PAGE_SIZE,
  StageState,
  StatusEntry,
} from './status.types';

/** Per-stage status events of ingestion jobs, job summaries, and the rollup clients poll. */
@Injectable()
export class StatusService {
  /** Stage events and job outcomes as recorded, when the process keeps metrics (labels: names, states). */
  private readonly counted: { stages: Counter<'stage' | 'state'>; jobs: Counter<'outcome'> } | null;
  private readonly batcher: StatusBatcher;

  constructor(
    private readonly repo: StatusRepository,
    @Inject(CLOCK) private readonly clock: Clock,
    @Optional() @Inject(METRICS_REGISTRY) registry?: Registry,
  ) {
    this.batcher = new StatusBatcher((batches) => this.repo.record(batches));
    this.counted = registry
      ? {
          stages: sharedMetric(
            registry,
            'tapyard_job_stage_events_total',
            () =>
              new Counter({
                name: 'tapyard_job_stage_events_total',
                help: 'Status events of ingest jobs by stage (process name) and state',
                labelNames: ['stage', 'state'],
                registers: [registry],
              }),
          ),
          jobs: sharedMetric(
            registry,
            'tapyard_jobs_total',
            () =>
              new Counter({
                name: 'tapyard_jobs_total',
                help: 'Ingest jobs that reached their terminal status, by outcome',
                labelNames: ['outcome'],
                registers: [registry],
              }),
          ),
        }
      : null;
  }

  /**
   * Records one stage event; `outcome` marks the job's terminal event (`processing`: an error event
   * that is not the job's end, such as one destination failing while others load). Descriptions often quote
   * the input (a key, a value, a server's message): control characters are escaped, since one NUL
   * would make PostgreSQL refuse the entry and the job could never reach its terminal state.
   * The terminal event is final: an event after it is dropped, whoever sends it. `rows`: what the
   * job loaded and rejected (the rollup's rowsLoaded and rowsRejected), given with its terminal event.
   */
  record(
    job: JobRef,
    processName: ProcessName,
    state: StageState,
    description: string,
    outcome: JobStatus | null = null,
    rows: JobRows | null = null,
  ): Promise<void> {
    return this.recordAll(job, [this.event(processName, state, description, outcome, rows)]);
  }

  /**
   * Events of one job written together, in order, in one round trip (each as record() writes it): a
   * stage change that makes several entries at once costs one statement, not one each; other jobs'
   * writes made meanwhile may share it (StatusBatcher).
   */
  recordAll(job: JobRef, events: readonly RecordedEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    const ref = { ...job, filename: safeText(job.filename) };
    return this.batcher.record({ job: ref, events }).then(() => {
      for (const e of events) {
        this.counted?.stages.inc({ stage: e.processName, state: e.state });
        if (e.outcome !== null && e.outcome !== 'processing') this.counted?.jobs.inc({ outcome: e.outcome });
      }
    });
  }

  /** An event as it happens now, to write with record() or recordAll() (its description made safe). */
  event(
    processName: ProcessName,
    state: StageState,
    description: string,
    outcome: JobStatus | null = null,
    rows: JobRows | null = null,
  ): RecordedEvent {
    return { processName, state, description: safeText(description), epoch: this.clock.now(), outcome, rows };
  }

  /**
   * The events of one job, written in batches (see JobEvents). `intake`: the intake's entries its job
   * carries (the queue's IntakeEntry: an upload's StreamNotifier begin, and a small one's end, which
   * the API writes while the job is already queued): the job's first write includes them, written
   * once, so they come first in the job's entries whichever of the two writes is first.
   */
  of(job: JobRef, intake: readonly { state: string; description: string; epoch: number }[] = []): JobEvents {
    const events = new JobEvents(this, job);
    for (const e of intake) {
      // Only the intake's own entries: a job cannot have anything else written ahead of its own.
      if (e.state !== 'begin' && e.state !== 'end') continue;
      events.carry({ ...this.event('StreamNotifier', e.state, e.description), epoch: e.epoch, once: true });
    }
    return events;
  }

  /** Whether the job has its terminal event: a delivery of it then must neither load nor write. */
  ended(environment: string, pipelineToken: string): Promise<boolean> {
    return this.repo.ended(environment, pipelineToken);
  }

  /**
   * The pipeline a job loaded for, whether it ended and its recorded scope; null when no job of the
   * environment has the token.
   */
  job(
    environment: string,
    pipelineToken: string,
  ): Promise<{ pipeline: string; ended: boolean; scope: JobScope | null } | null> {
    return this.repo.job(environment, pipelineToken);
  }

  /**
   * The query methods take `visible`, which keeps the jobs the caller may see (by their recorded scope);
   * a token none of whose jobs is visible is answered as unknown.
   */
  eventsOfJob(environment: string, pipelineToken: string, visible = ALL_JOBS): Promise<StatusEntry[]> {
    return this.eventsBy(environment, 'pipeline_token', pipelineToken, visible);
  }

  eventsOfPublisher(environment: string, publisherToken: string, visible = ALL_JOBS): Promise<StatusEntry[]> {
    return this.eventsBy(environment, 'publisher_token', publisherToken, visible);
  }

  rollupOfJob(
    environment: string,
    pipelineToken: string,
    visible = ALL_JOBS,
  ): Promise<{ rollup: Rollup; events: StatusEntry[] }> {
    return this.rollupBy(environment, 'pipeline_token', pipelineToken, visible);
  }

  rollupOfPublisher(
    environment: string,
    publisherToken: string,
    visible = ALL_JOBS,
  ): Promise<{ rollup: Rollup; events: StatusEntry[] }> {
    return this.rollupBy(environment, 'publisher_token', publisherToken, visible);
  }

  /**
   * A caller-chosen publisher token belongs to the catalog that used it first: another catalog's
   * uploads under it are refused, so one catalog cannot write into (or turn the rollup of) another's.
   */
  async claimPublisherToken(environment: string, token: string, catalog: string | null): Promise<void> {
    const holder = await this.repo.claimPublisherToken(environment, token, catalog ?? '');
    if (holder !== (catalog ?? '')) {
      throw new ConflictError(
        `publisher token '${token}' is in use by another catalog: choose another token`,
      );
    }
  }

  private async eventsBy(
    environment: string,
    by: 'pipeline_token' | 'publisher_token',
    token: string,
    visible: JobsFilter,
  ): Promise<StatusEntry[]> {
    const jobs = visible(await this.repo.jobScopes(environment, by, token));
    if (jobs.length === 0) throw unknownToken(by, token);
    const shown = new Set(jobs.map((j) => j.pipeline_token));
    const rows = await this.repo.events(environment, by, token);
    return rows.filter((e) => shown.has(e.pipeline_token)).map(toEntry);
  }

  private async rollupBy(
    environment: string,
    by: 'pipeline_token' | 'publisher_token',
    token: string,
    visible: JobsFilter,
  ): Promise<{ rollup: Rollup; events: StatusEntry[] }> {
    const all = await this.repo.jobsAndEvents(environment, by, token);
    const jobs = visible(all.jobs);
    if (jobs.length === 0) throw unknownToken(by, token);
    const shown = new Set(jobs.map((j) => j.pipeline_token));
    const events = all.events.filter((e) => shown.has(e.pipeline_token));
    return { rollup: this.rollup(jobs), events: events.map(toEntry) };
  }

  async summariesOfPipeline(
    environment: string,
    pipeline: string,
    page: number,
    visible = ALL_JOBS,
  ): Promise<JobSummary[]> {
    const rows = await this.repo.jobsOfPipeline(
      environment,
      pipeline,
      SUMMARY_PAGE_SIZE,
      (page - 1) * SUMMARY_PAGE_SIZE,
    );
    return visible(rows).map(toSummary);
  }

  /**
   * The newest jobs of every pipeline the caller may see, as rollup entries, `RECENT_PAGE_SIZE` per page.
   * Visibility is decided per job (its recorded scope), so the jobs are read in batches until the page is
   * full or none are left: a scoped caller's page is never short because others' jobs came first.
   */
  async recentJobs(environment: string, page: number, visible = ALL_JOBS): Promise<RollupJob[]> {
    const wanted = page * RECENT_PAGE_SIZE;
    const batch = Math.max(wanted, RECENT_BATCH);
    const shown: JobRow[] = [];
    for (let offset = 0; shown.length < wanted; offset += batch) {
      const rows = await this.repo.recentJobs(environment, batch, offset);
      shown.push(...visible(rows));
      if (rows.length < batch) break;
    }
    const now = this.clock.now();
    return shown.slice(wanted - RECENT_PAGE_SIZE, wanted).map((r) => this.rollupJob(r, now));
  }

  deleteAll(environment: string): Promise<number> {
    return this.repo.deleteAll(environment);
  }

  private rollup(rows: JobRow[]): Rollup {
    const now = this.clock.now();
    const jobs = rows.map((r) => this.rollupJob(r, now));
    const statuses = new Set<RollupJobStatus>(jobs.map((j) => j.status));
    const status: JobStatus = statuses.has('processing')
      ? 'processing'
      : statuses.has('error') || statuses.has('timed_out')
        ? 'error'
        : statuses.has('warning')
          ? 'warning'
          : 'success';
    return { allDone: !statuses.has('processing'), status, jobs };
  }

  private rollupJob(r: JobRow, now: number): RollupJob {
    const started = Number(r.started_at);
    const last = Number(r.last_event_at);
    const timedOut = r.status === 'processing' && now - started >= JOB_TIMEOUT_MS;
    const status: RollupJobStatus = timedOut ? 'timed_out' : r.status;
    const end = r.status === 'processing' ? (timedOut ? started + JOB_TIMEOUT_MS : now) : last;
    return {
      pipelineToken: r.pipeline_token,
      pipeline: r.pipeline,
      filename: r.filename,
      status,
      startedAt: isoMillis(started),
      lastEventAt: isoMillis(last),
      elapsed: seconds(end - started),
      lastError:
        r.status === 'error' || timedOut
          ? {
              processName: r.last_error_process ?? r.last_process,
              description:
                r.last_error_description ??
                (timedOut ? 'no terminal event within 8 hours of the first event' : 'job failed'),
            }
          : null,
      rowsLoaded: r.rows_loaded === null ? null : Number(r.rows_loaded),
      rowsRejected: r.rows_rejected === null ? null : Number(r.rows_rejected),
    };
  }
}

/**
 * One job's events as its run makes them: `add` keeps an event (with the time it happened) until the
 * next `record` or `flush`, which writes everything kept and its own event in one round trip, in
 * order. A run adds the entries of a stage change (each stage's begin, each stage's end) and writes
 * them at once; a job that stops between writes what it kept before its error, so the job's events
 * and their order are those it would have written one by one.
 */
export class JobEvents {
  private kept: RecordedEvent[] = [];
  /** A write lingerFor() scheduled and not yet made. */
  private timer: NodeJS.Timeout | null = null;
  /** The write that timer made, until the next write has waited for it (and takes its failure). */
  private lingering: Promise<unknown> | null = null;

  constructor(
    private readonly status: StatusService,
    readonly job: JobRef,
  ) {}

  add(processName: ProcessName, state: StageState, description: string): void {
    this.kept.push(this.status.event(processName, state, description));
  }

  /** An event made elsewhere (with its own time), kept for the next write. */
  carry(event: RecordedEvent): void {
    this.kept.push(event);
  }

  record(
    processName: ProcessName,
    state: StageState,
    description: string,
    outcome: JobStatus | null = null,
    rows: JobRows | null = null,
  ): Promise<void> {
    return this.write([this.status.event(processName, state, description, outcome, rows)]);
  }

  flush(): Promise<void> {
    return this.write([]);
  }

  /**
   * Writes what is kept `ms` from now unless the job writes sooner: a short job's begin entries go in
   * its end's round trip (one statement and one commit fewer per small job), a longer job's are
   * seen while it runs. The entries keep the times they happened.
   */
  lingerFor(ms: number): void {
    if (this.timer !== null || this.kept.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      // Waited for by the next write, which fails as this one did: a job's end is never written
      // after a failure of its earlier entries went unseen.
      this.lingering = this.write([]).then(
        () => null,
        (err: unknown) => ({ err }),
      );
    }, ms);
  }

  private async write(more: RecordedEvent[]): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const events = this.kept.concat(more);
    this.kept = [];
    const before = this.lingering;
    this.lingering = null;
    if (before !== null) {
      const failed = (await before) as { err: unknown } | null;
      if (failed !== null) throw failed.err;
    }
    return this.status.recordAll(this.job, events);
  }
}

function toEntry(r: EventRow): StatusEntry {
  const epoch = Number(r.epoch);
  return {
    id: Number(r.id),
    dateTime: humanTime(epoch),
    pipeline: r.pipeline,
    processName: r.process_name,
    publisherToken: r.publisher_token,
    pipelineToken: r.pipeline_token,
    filename: r.filename,
    state: r.state,
    code: r.state,
    description: r.description,
    epoch,
  };
}

function toSummary(r: JobRow): JobSummary {
  const started = Number(r.started_at);
  const last = Number(r.last_event_at);
  const ended = r.ended_at === null ? null : Number(r.ended_at);
  return {
    createdAtTimestamp: new Date(started).toISOString(),
    createdAt: started,
    updatedAt: last,
    pipeline: r.pipeline,
    pipelineToken: r.pipeline_token,
    process: r.last_process,
    startTime: humanTime(started),
    endTime: ended === null ? '' : humanTime(ended),
    totalTime: seconds((ended ?? last) - started),
    status: r.last_state,
  };
}

/** `2026-11-22 05:03:48.143` (UTC). */
export function humanTime(epoch: number): string {
  return new Date(epoch).toISOString().replace('T', ' ').replace('Z', '');
}

function isoMillis(epoch: number): string {
  return new Date(epoch).toISOString();
}

/** Seconds with a unit, e.g. `12.345s`. */
export function seconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(3)}s`;
}

function unknownToken(by: 'pipeline_token' | 'publisher_token', token: string): NotFoundError {
  return new NotFoundError(
    `no job has ${by === 'pipeline_token' ? 'pipeline' : 'publisher'} token '${token}'`,
  );
}
