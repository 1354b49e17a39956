import { Injectable } from '@nestjs/common';
import { Job } from 'bullmq';

/**
 * The jobs this process is running, with the lock token each was taken with: what a shutdown waits
 * for, and what it hands back to the queue when the grace runs out.
 */
@Injectable()
export class InFlightJobs {
  private readonly running = new Map<Job, string | undefined>();
  private waiters: (() => void)[] = [];

  async run<T>(job: Job, token: string | undefined, work: () => Promise<T>): Promise<T> {
    this.running.set(job, token);
    try {
      return await work();
    } finally {
      this.running.delete(job);
      if (this.running.size === 0) for (const wake of this.waiters.splice(0)) wake();
    }
  }

  /** Resolves once no job runs. */
  idle(): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The running jobs that can be handed back (a lock token is needed to move a job). */
  held(): { job: Job; token: string }[] {
    return [...this.running].flatMap(([job, token]) => (token === undefined ? [] : [{ job, token }]));
  }
}
