import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig } from '@tapyard/core';

/**
 * How many jobs of an environment may be delivering to sinks at once in this worker process
 * (SINK_CONCURRENCY, below WORKER_CONCURRENCY). A job past the limit does not wait for a place
 * inside its worker slot: the runner takes the job's place before reading anything and, when every
 * place is taken, puts the job back in the queue without spending a delivery, so sinks that
 * answer slowly (or not at all, until SINK_LOAD_TIMEOUT_MS) never hold every slot of a worker and
 * other pipelines keep loading. A job's legs to several sinks share one place.
 */
@Injectable()
export class SinkGate {
  readonly limit: number;
  /** Per environment: the jobs delivering, with how many of their legs are. */
  private readonly jobs = new Map<string, Map<string, number>>();

  constructor(@Inject(CONFIG) config: TapyardConfig) {
    this.limit = config.sinks.concurrency;
  }

  /** A place for the job's leg, with the function giving it back; null when every place is taken. */
  enter(environment: string, pipelineToken: string): (() => void) | null {
    let held = this.jobs.get(environment);
    if (!held) {
      held = new Map();
      this.jobs.set(environment, held);
    }
    const legs = held.get(pipelineToken);
    if (legs === undefined && held.size >= this.limit) return null;
    held.set(pipelineToken, (legs ?? 0) + 1);
    const places = held;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const n = (places.get(pipelineToken) ?? 1) - 1;
      if (n > 0) places.set(pipelineToken, n);
      else places.delete(pipelineToken);
      if (places.size === 0 && this.jobs.get(environment) === places) this.jobs.delete(environment);
    };
  }
}
