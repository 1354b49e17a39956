import { Injectable } from '@nestjs/common';
import { PipelinesService } from '@tapyard/pipelines';
import { DEFAULT_THRESHOLDS, Thresholds } from './evidence';
import { IncidentsRepository } from './incidents.repository';

/** The limits a pipeline's evidence is checked against: its own where set, else the built-in defaults. */
@Injectable()
export class IncidentThresholds {
  constructor(
    private readonly pipelines: PipelinesService,
    private readonly repo: IncidentsRepository,
  ) {}

  /** The thresholds a pipeline's evidence is checked against, and whether they are its own. */
  async of(environment: string, pipeline: string): Promise<{ thresholds: Thresholds; custom: boolean }> {
    await this.pipelines.get(environment, pipeline);
    const own = await this.repo.thresholds(environment, pipeline);
    return { thresholds: { ...DEFAULT_THRESHOLDS, ...own }, custom: own !== null };
  }

  /** Sets a pipeline's thresholds: given fields over the current ones; the next evidence uses them. */
  async set(
    environment: string,
    pipeline: string,
    changes: Partial<Thresholds>,
  ): Promise<{ thresholds: Thresholds; custom: boolean }> {
    const { thresholds } = await this.of(environment, pipeline);
    const defined = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    await this.repo.setThresholds(environment, pipeline, { ...thresholds, ...defined });
    return this.of(environment, pipeline);
  }

  /** Back to the built-in defaults. */
  async clear(environment: string, pipeline: string): Promise<{ thresholds: Thresholds; custom: boolean }> {
    await this.pipelines.get(environment, pipeline);
    await this.repo.clearThresholds(environment, pipeline);
    return this.of(environment, pipeline);
  }
}
