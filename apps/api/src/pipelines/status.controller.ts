import { Controller, Delete, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ValidationError } from '@tapyard/core';
import { JobSummary, JobsFilter, Rollup, StatusEntry, StatusService } from '@tapyard/status';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { Access } from '@tapyard/auth';
import { Requires } from '../auth/access-rule';
import { statusQuery } from '../auth/scopes';
import {
  ROLLUP_EXAMPLE,
  STATUS_ENTRY_EXAMPLE,
  SUMMARY_EXAMPLE,
  StatusDeletedDto,
  StatusQueryDto,
} from './pipelines.dto';

type StatusAnswer = StatusEntry[] | JobSummary[] | { rollup: Rollup; events: StatusEntry[] };

@ApiTags('pipeline status')
@Controller('pipeline/status')
export class StatusController {
  constructor(private readonly status: StatusService) {}

  @Get()
  @Requires('job:read', statusQuery)
  @ApiOperation({
    summary: 'Status of ingestion jobs',
    description:
      'Exactly one query is used, by precedence: `publishertoken` (events of every job with that token, oldest first), ' +
      '`pipelinetoken` (events of one job), `pipelinename` (job summaries, newest first, 50 per `page`). With ' +
      '`withrollup=true` a token query answers `{rollup, events}`: poll until `rollup.allDone`, then read `rollup.status` ' +
      'and `rollup.jobs[].lastError`; `rollup.jobs[].rowsLoaded` and `rowsRejected` are the numbers of rows a job ' +
      'loaded and rejected (null until it ends, and for a job that ended before reading its input). Progress ' +
      'entries (`processing`) of a loader read `N rows loaded so far; M rejected; R of T bytes read (P%)` when the ' +
      "input's size is known, else `...; R bytes read`. A job with no terminal event 8 hours after its first is " +
      '`timed_out`. Scoped ' +
      'callers see only jobs whose pipeline was in their scope when the job began; a token with none of those is 404.',
  })
  @ApiOkResponse({
    description: 'Status entries, job summaries, or {rollup, events}',
    schema: {
      oneOf: [
        { type: 'array', items: { type: 'object' }, example: [STATUS_ENTRY_EXAMPLE] },
        { type: 'array', items: { type: 'object' }, example: [SUMMARY_EXAMPLE] },
        { type: 'object', example: ROLLUP_EXAMPLE },
      ],
    },
  })
  @ApiErrors({ 400: 'No token or pipeline name given', 404: 'No job has that token' })
  query(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Query() q: StatusQueryDto,
  ): Promise<StatusAnswer> {
    // Jobs carry the scope of their pipeline as it was when they began, not as a same-named one is now.
    const visible: JobsFilter = (jobs) => access.filter(jobs, 'read', 'job', (j) => j.scope ?? {});
    if (q.publishertoken) {
      return q.withrollup
        ? this.status.rollupOfPublisher(env, q.publishertoken, visible)
        : this.status.eventsOfPublisher(env, q.publishertoken, visible);
    }
    if (q.pipelinetoken) {
      return q.withrollup
        ? this.status.rollupOfJob(env, q.pipelinetoken, visible)
        : this.status.eventsOfJob(env, q.pipelinetoken, visible);
    }
    if (q.pipelinename) return this.status.summariesOfPipeline(env, q.pipelinename, q.page ?? 1, visible);
    throw new ValidationError('give one of publishertoken, pipelinetoken or pipelinename');
  }

  @Delete()
  @Requires('job:delete')
  @ApiOperation({
    summary: 'Remove all status and job history of the environment',
    description: 'Pipeline configurations and loaded data are untouched.',
  })
  @ApiOkResponse({ type: StatusDeletedDto })
  async deleteAll(@RequestEnvironment() env: string): Promise<StatusDeletedDto> {
    return { deleted: await this.status.deleteAll(env) };
  }
}
