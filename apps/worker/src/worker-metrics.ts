import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable } from '@nestjs/common';
import { Queue } from 'bullmq';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { CONFIG, METRICS_REGISTRY, TapyardConfig } from '@tapyard/core';
import { EnvironmentQueues, QUEUES } from '@tapyard/queue';
import { IngestProcessor } from './ingest.processor';
import { TenantWorkers } from './tenant-workers';

/** Queue states an operator scales and alerts on. */
const STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/** A fresh registry for one worker process, labelled with its environment. */
export function workerRegistry(environment: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ environment });
  collectDefaultMetrics({ register: registry, prefix: 'tapyard_' });
  return registry;
}

/**
 * The worker's own figures on the process registry (the libraries add theirs: jobs and stages, rows
 * loaded, tap runs, stage stalls). Queue depth and the age of the oldest waiting job are read from
 * Redis at scrape time, so any worker of an environment reports the same, current numbers. Labels
 * hold bounded values only: environment, queue kind, state.
 */
@Injectable()
export class WorkerMetrics {
  readonly schedulerLag: Histogram;
  readonly handedBack: Counter<'queue'>;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(METRICS_REGISTRY) readonly registry: Registry,
    @InjectQueue(QUEUES.maintenance) private readonly maintenance: Queue,
    private readonly queues: EnvironmentQueues,
    private readonly tenants: TenantWorkers,
    ingest: IngestProcessor,
  ) {
    const registers = [registry];
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- prom-client calls collect() with the gauge as `this`
    const self = this;
    new Gauge({
      name: 'tapyard_queue_jobs',
      help: 'Jobs in each queue by state, read from Redis at scrape time',
      labelNames: ['environment', 'queue', 'state'],
      registers,
      async collect() {
        const read = await self.read((queue) => queue.getJobCounts('wait', 'active', 'delayed', 'failed'));
        this.reset();
        for (const { environment, kind, value: counts } of read) {
          for (const state of STATES) {
            this.set({ environment, queue: kind, state }, counts[state === 'waiting' ? 'wait' : state] ?? 0);
          }
        }
      },
    });
    new Gauge({
      name: 'tapyard_queue_oldest_job_age_seconds',
      help: 'Age of the oldest waiting job of each queue (0 when none waits): what an autoscaler scales on',
      labelNames: ['environment', 'queue'],
      registers,
      async collect() {
        const read = await self.read((queue) => queue.getJobs(['wait'], 0, 0, true));
        this.reset();
        for (const {
          environment,
          kind,
          value: [oldest],
        } of read) {
          const age = oldest ? Math.max(0, (Date.now() - oldest.timestamp) / 1000) : 0;
          this.set({ environment, queue: kind }, age);
        }
      },
    });
    new Gauge({
      name: 'tapyard_large_jobs',
      help: 'Large jobs (staged inputs, archives, documents) of this worker process holding one of its LARGE_JOB_CONCURRENCY places, and waiting for one',
      labelNames: ['state'],
      registers,
      collect() {
        const { running, waiting } = ingest.largeJobs;
        this.set({ state: 'running' }, running);
        this.set({ state: 'waiting' }, waiting);
      },
    });
    this.schedulerLag = new Histogram({
      name: 'tapyard_scheduler_lag_seconds',
      help: 'How late a scheduled tap fire was taken, after its fire time',
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900],
      registers,
    });
    this.handedBack = new Counter({
      name: 'tapyard_jobs_handed_back_total',
      help: 'Running jobs handed back to their queue at the end of a shutdown grace',
      labelNames: ['queue'],
      registers,
    });
  }

  exposition(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * One figure of every queue this worker serves, within HEALTH_TIMEOUT_MS. While Redis does not
   * answer the queue series are left out of the scrape (none rather than stale ones), so an alert on
   * their absence fires.
   */
  private async read<T>(
    get: (queue: Queue) => Promise<T>,
  ): Promise<{ environment: string; kind: string; value: T }[]> {
    const own = this.config.environment;
    const watched = [
      { environment: own, kind: QUEUES.maintenance, queue: this.maintenance },
      ...[own, ...this.tenants.tenants].map((environment) => ({
        environment,
        kind: QUEUES.ingest,
        queue: this.queues.ingest(environment).bull,
      })),
    ];
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('Redis did not answer')), this.config.healthTimeoutMs);
    });
    try {
      return await Promise.race([
        Promise.all(watched.map(async (w) => ({ ...w, value: await get(w.queue) }))),
        late,
      ]);
    } catch {
      return [];
    } finally {
      clearTimeout(timer);
    }
  }
}
