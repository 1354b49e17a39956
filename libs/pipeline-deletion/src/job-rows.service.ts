import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import type { AccessCheck } from '@tapyard/auth';
import { CONFIG, ConflictError, DomainCode, LOGGER, NotFoundError, TapyardConfig } from '@tapyard/core';
import { DESTINATIONS, DestinationRegistry, destinationsFor } from '@tapyard/destinations';
import { LOAD_ID_COLUMN, PipelineErrorCode } from '@tapyard/model';
import {
  DestinationSections,
  PipelineDeletingError,
  PipelinePolicy,
  PipelinesService,
  jobNotFoundMessage,
  pipelineScope,
} from '@tapyard/pipelines';
import { StatusService } from '@tapyard/status';

/** No job the caller may see has the token (unknown, another tenant's, outside the caller's scope). */
export class JobNotFoundError extends NotFoundError {
  override domainCode: DomainCode = PipelineErrorCode.JobNotFound;
  constructor(pipelineToken: string) {
    super(jobNotFoundMessage(pipelineToken));
  }
}

/** A job whose rows cannot be taken back now (it runs) or ever (they carry no load id). */
export class RowsNotRemovableError extends ConflictError {
  override domainCode: DomainCode = PipelineErrorCode.RowsNotRemovable;
}

/** A page of one job's loaded or rejected rows, read back from the first destination that keeps them. */
export interface JobRowsPage {
  /** Where they were read; null when no destination of the pipeline can read rows back (sinks, files). */
  location: string | null;
  /** The pipeline's columns, in schema order (the keys of each loaded row). */
  columns: string[];
  rows: Record<string, unknown>[];
}

export interface RemovedRows {
  /** Rows removed, per destination (`postgres`, `mongodb`, `objectstore`). */
  removed: Record<string, number>;
}

/**
 * `DELETE /pipeline/jobs/{pipelineToken}/rows`: takes back what one job loaded, in every destination
 * of its pipeline that can (tables and collections by load id, the object store by job folder; sinks
 * cannot). The job's ledger entries stay, so a late redelivery of it loads nothing again.
 */
@Injectable()
export class JobRowsService {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(DESTINATIONS) private readonly destinations: DestinationRegistry,
    private readonly pipelines: PipelinesService,
    private readonly policy: PipelinePolicy,
    private readonly status: StatusService,
    private readonly sections: DestinationSections,
  ) {}

  /**
   * Reads back a page of what a job left: `rejects` (line, stage, reason) needs job:read on the job, as
   * its status does; `loaded` rows are data, so search:query on the pipeline's database too (as the SQL
   * route would need to read them). A job the caller may not see is answered as absent.
   */
  async read(
    environment: string,
    pipelineToken: string,
    access: AccessCheck,
    which: 'loaded' | 'rejects',
    page: { limit: number; offset: number },
  ): Promise<JobRowsPage> {
    const job = await this.status.job(environment, pipelineToken);
    const stored = job && (await this.pipelines.find(environment, job.pipeline));
    if (!job || !stored) throw new JobNotFoundError(pipelineToken);
    const def = stored.definition;
    access.assertVisible(
      'read',
      'job',
      job.scope ?? pipelineScope(def),
      jobNotFoundMessage(pipelineToken),
      PipelineErrorCode.JobNotFound,
    );
    if (which === 'loaded') {
      access.require(
        'query',
        'search',
        { database: def.destination.database?.dbName ?? null },
        'to read the rows a job loaded',
      );
    }
    this.sections.assertAllowed(this.config, environment, def.destination);
    const columns =
      which === 'loaded'
        ? def.source.schemaProperties.fields.map((f) => f.name)
        : ['line', 'stage', 'reason'];
    const reader = destinationsFor(this.destinations, def.destination).find((d) => d.readRows);
    if (!reader?.readRows) return { location: null, columns, rows: [] };
    const target = {
      environment,
      pipeline: job.pipeline,
      destination: def.destination,
      columns: def.source.schemaProperties.fields,
      pipelineToken,
      loadId: stored.loadId,
    };
    const { location, rows } = await reader.readRows(target, which, page);
    return { location, columns, rows };
  }

  async remove(environment: string, pipelineToken: string, access: AccessCheck): Promise<RemovedRows> {
    const job = await this.status.job(environment, pipelineToken);
    const stored = job && (await this.pipelines.find(environment, job.pipeline));
    if (!job || !stored) throw new JobNotFoundError(pipelineToken);
    const def = stored.definition;
    this.policy.assertMayRemoveRows(access, pipelineToken, job.scope ?? pipelineScope(def));
    if (stored.deletingSince) throw new PipelineDeletingError(job.pipeline);
    if (!job.ended) {
      throw new RowsNotRemovableError(
        `job '${pipelineToken}' is still running: remove its rows once it has ended`,
      );
    }
    if (!stored.loadId) {
      throw new RowsNotRemovableError(
        `pipeline '${job.pipeline}' was created before load ids: its rows carry no ${LOAD_ID_COLUMN}, so one job's rows cannot be told apart`,
      );
    }
    // As for any delete: a stored definition is never a licence to write outside the confinement.
    this.sections.assertAllowed(this.config, environment, def.destination);
    const removed: Record<string, number> = {};
    for (const d of destinationsFor(this.destinations, def.destination)) {
      if (!d.removeRows) continue;
      removed[d.name] = await d.removeRows({
        environment,
        pipeline: job.pipeline,
        destination: def.destination,
        columns: def.source.schemaProperties.fields,
        pipelineToken,
        loadId: true,
      });
    }
    this.logger.info(
      { pipeline: job.pipeline, pipelineToken, removed, key: access.caller?.name ?? 'anonymous' },
      'job rows removed',
    );
    return { removed };
  }
}
