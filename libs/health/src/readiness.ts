import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { CONFIG, ShutdownState, TapyardConfig } from '@tapyard/core';
import { QUEUES } from '@tapyard/queue';

/**
 * Readiness of a process (`GET /readyz` of the API and of a worker): it serves only while PostgreSQL
 * and Redis answer, through the connections it works with, and it is not shutting down. Each check is
 * bounded by HEALTH_TIMEOUT_MS, so a hanging peer makes the probe fail rather than hang.
 */
@Injectable()
export class Readiness {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @InjectDataSource() private readonly db: DataSource,
    @InjectQueue(QUEUES.maintenance) private readonly queue: Queue,
    private readonly shutdown: ShutdownState,
  ) {}

  async ready(): Promise<boolean> {
    if (this.shutdown.draining) return false;
    // A queue read proves Redis answers on the connection the process works with.
    const checks = [this.db.query('SELECT 1'), this.queue.count()];
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no answer')), this.config.healthTimeoutMs);
    });
    try {
      await Promise.race([Promise.all(checks), late]);
      return !this.shutdown.draining;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
