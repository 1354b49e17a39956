import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access } from '@tapyard/auth';
import { JobRowsService } from '@tapyard/pipeline-deletion';
import { JobsFilter, StatusService } from '@tapyard/status';
import { Requires } from '../auth/access-rule';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import {
  JobRejectsPageDto,
  JobRowsPageDto,
  JobRowsParamsDto,
  PageQueryDto,
  RecentJobDto,
} from './pipelines.dto';

/** Rows read back per page of a job's rejects or loaded rows. */
const ROWS_PAGE_SIZE = 50;

@ApiTags('pipeline status')
@Controller('pipeline/jobs')
export class JobsController {
  constructor(
    private readonly status: StatusService,
    private readonly jobRows: JobRowsService,
  ) {}

  @Get()
  @Requires('job:read', 'filtered')
  @ApiOperation({
    summary: 'The newest jobs of every pipeline, with their rollup status',
    description:
      'Newest first, 20 per `page`, each as a rollup entry of GET /pipeline/status (status, rows loaded and ' +
      'rejected, last error). Scoped callers see only jobs whose pipeline was in their scope when the job began.',
  })
  @ApiOkResponse({ type: [RecentJobDto] })
  @ApiErrors(400)
  recent(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Query() q: PageQueryDto,
  ): Promise<RecentJobDto[]> {
    const visible: JobsFilter = (jobs) => access.filter(jobs, 'read', 'job', (j) => j.scope ?? {});
    return this.status.recentJobs(env, q.page ?? 1, visible);
  }

  @Get(':pipelineToken/rejects')
  @Requires('job:read', 'in-handler')
  @ApiOperation({
    summary: 'The rows a job rejected, with their line and reason',
    description:
      'Read back from where the pipeline keeps them (the PostgreSQL `<table>_rejects`), in line order, 50 per ' +
      '`page`; `location` is null when no destination of the pipeline keeps rejects to read back. The raw row is ' +
      'not returned (it is data: read it with SQL). A job outside the caller’s scope is 404.',
  })
  @ApiOkResponse({ type: JobRejectsPageDto })
  @ApiErrors(400, { 404: 'No job of the caller has that token' })
  async rejects(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param() params: JobRowsParamsDto,
    @Query() q: PageQueryDto,
  ): Promise<JobRejectsPageDto> {
    const page = q.page ?? 1;
    const read = await this.jobRows.read(env, params.pipelineToken, access, 'rejects', pageOf(page));
    return {
      pipelineToken: params.pipelineToken,
      location: read.location,
      page,
      pageSize: ROWS_PAGE_SIZE,
      rejects: read.rows as unknown as JobRejectsPageDto['rejects'],
    };
  }

  @Get(':pipelineToken/rows')
  @Requires('job:read', 'in-handler')
  @ApiOperation({
    summary: 'A preview of the rows a job loaded',
    description:
      'The rows carrying the job’s `_tapyard_load_id`, read back from the pipeline’s PostgreSQL table, 50 per ' +
      '`page`; `location` is null when no destination of the pipeline keeps rows to read back (sinks, files). ' +
      'Rows are data: besides job:read this needs search:query on the pipeline’s database (403 otherwise). A ' +
      'pipeline created before load ids has no rows that tell the job apart: the answer is empty.',
  })
  @ApiOkResponse({ type: JobRowsPageDto })
  @ApiErrors(400, { 404: 'No job of the caller has that token' })
  async rows(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param() params: JobRowsParamsDto,
    @Query() q: PageQueryDto,
  ): Promise<JobRowsPageDto> {
    const page = q.page ?? 1;
    const read = await this.jobRows.read(env, params.pipelineToken, access, 'loaded', pageOf(page));
    return { pipelineToken: params.pipelineToken, page, pageSize: ROWS_PAGE_SIZE, ...read };
  }
}

function pageOf(page: number): { limit: number; offset: number } {
  return { limit: ROWS_PAGE_SIZE, offset: (page - 1) * ROWS_PAGE_SIZE };
}
