import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import { DueTap, TapRunner, TapsRepository, nextFire } from '@tapyard/taps';
import { TenantWorkers } from './tenant-workers';
import { WorkerMetrics } from './worker-metrics';

/**
 * Fires enabled tap schedules. Every worker polls; a fire time becomes a run only in the worker whose
 * conditional update moves the tap's `next_fire_at` forward (TapsRepository.claimFire), so each fire
 * time runs once however many workers there are.
 *
 * Misfire policy (after downtime, or when every slot was busy): the overdue fire runs once, as soon
 * as a worker sees it, and the next fire time is computed from now, so missed fire times are not
 * replayed as a burst. Schedules are read from the database on every tick: changes need no restart.
 * Once a minute it also closes history entries of runs whose process stopped mid-run.
 */
/** How often a worker closes runs abandoned by a stopped process. */
const SWEEP_EVERY_MS = 60_000;

@Injectable()
export class TapScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  /** Runs in progress, with what a hand-back needs to give their fire time to another worker. */
  private readonly running = new Map<Promise<unknown>, Fire>();
  private swept = 0;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly repo: TapsRepository,
    private readonly runner: TapRunner,
    private readonly tenants: TenantWorkers,
    private readonly metrics: WorkerMetrics,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.taps.schedulerTickMs === 0) return;
    this.timer = setInterval(() => {
      this.ticking ??= this.tick()
        .catch((err: unknown) => this.logger.warn({ err: errorMessage(err) }, 'tap schedule poll failed'))
        .finally(() => (this.ticking = null));
    }, this.config.taps.schedulerTickMs);
    this.timer.unref();
  }

  /** Stops firing new runs. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Number of runs in progress. */
  get runs(): number {
    return this.running.size;
  }

  /** Resolves when the poll in progress and every run in progress have ended. */
  async idle(): Promise<void> {
    await this.ticking;
    await Promise.allSettled([...this.running.keys()]);
  }

  /**
   * At the end of a shutdown grace: stops the runs still in progress (each ends `error` saying so, nothing
   * of it loaded, its state kept), waits up to `withinMs` for them to record that, and gives each fire time
   * back (the tap's next fire set to it again, unless someone changed the schedule meanwhile) so the next
   * worker polling runs it at once, instead of the fire being lost until the next one. Returns how many
   * fires were handed back.
   */
  async handBack(withinMs: number): Promise<number> {
    this.stop();
    const fires = [...this.running];
    for (const [, fire] of fires) fire.stop.abort(HANDED_BACK);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(fires.map(([run]) => run)),
      new Promise((resolve) => (timer = setTimeout(resolve, withinMs))),
    ]);
    clearTimeout(timer);
    const given = await Promise.allSettled(
      fires.map(([, f]) => this.repo.refire(f.environment, f.tap, f.next, f.fireAt)),
    );
    return given.filter((g) => g.status === 'fulfilled' && g.value).length;
  }

  /** Runs in progress finish (a draining worker bounds the wait by its grace, then hands them back). */
  async onApplicationShutdown(): Promise<void> {
    this.stop();
    await this.idle();
  }

  private async tick(): Promise<void> {
    const environments = [this.config.environment, ...this.tenants.tenants];
    if (Date.now() - this.swept > SWEEP_EVERY_MS) {
      this.swept = Date.now();
      // A run can last TAP_TIMEOUT_MS at most; one still `running` well after that lost its process.
      const closed = await this.repo.closeAbandonedRuns(
        environments,
        this.config.taps.timeoutMs + SWEEP_EVERY_MS,
      );
      if (closed > 0) this.logger.warn({ closed }, 'tap runs whose process stopped are marked error');
    }
    if (this.running.size >= this.config.taps.concurrency) return;
    const now = new Date();
    const due = await this.repo.due(environments, now);
    for (const d of due) {
      if (this.running.size >= this.config.taps.concurrency) return;
      await this.fire(d, now);
    }
  }

  private async fire(d: DueTap, now: Date): Promise<void> {
    const { environment, config: tap } = d;
    let next: Date | null = null;
    if (tap.enabled && tap.cronExpression) {
      try {
        next = nextFire(tap.cronExpression, tap.timezone, now);
      } catch {
        next = null;
      }
    }
    if (!(await this.repo.claimFire(environment, tap.name, d.nextFireAt, next))) return;
    if (!tap.enabled || !tap.cronExpression) return;
    // Late as of the claim, not of the tick's start: a fire time set after the tick began (but before its
    // query) read up to a tick's span less late than it was taken.
    const lateMs = Date.now() - d.nextFireAt.getTime();
    this.metrics.schedulerLag.observe(Math.max(0, lateMs) / 1000);
    this.logger.info(
      {
        environment,
        tap: tap.name,
        fireAt: d.nextFireAt.toISOString(),
        lateMs,
        next: next?.toISOString() ?? null,
      },
      'tap schedule fired',
    );
    const stop = new AbortController();
    const run = this.runner
      .run(environment, tap.name, { mode: 'run', trigger: 'schedule', signal: stop.signal })
      .then((r) =>
        // The API's RunResult keeps `success` for a run that ended with an error (the contract's shape); the log
        // says what the run's history entry says.
        this.logger.info(
          {
            environment,
            tap: tap.name,
            status: r.error ? 'error' : r.status,
            records: r.recordCount,
            error: r.error,
          },
          'scheduled tap run finished',
        ),
      )
      .catch((err: unknown) =>
        this.logger.warn({ environment, tap: tap.name, err: errorMessage(err) }, 'scheduled tap run failed'),
      )
      .finally(() => this.running.delete(run));
    this.running.set(run, { environment, tap: tap.name, fireAt: d.nextFireAt, next, stop });
  }
}

interface Fire {
  environment: string;
  tap: string;
  fireAt: Date;
  /** The next fire time this worker's claim set. */
  next: Date | null;
  stop: AbortController;
}

const HANDED_BACK =
  'this worker shut down before the run finished: the run was stopped and its fire handed back to another worker';
