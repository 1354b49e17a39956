import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Evidence, Incident, IncidentListItem, IncidentsService, PendingEvidence } from '@tapyard/incidents';
import { PipelinesService } from '@tapyard/pipelines';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { Access } from '@tapyard/auth';
import { Requires } from '../auth/access-rule';
import { incidentInPath, pipelineFields, pipelineInPath } from '../auth/scopes';
import {
  IncidentDto,
  IncidentListItemDto,
  IncidentQueryDto,
  IncidentThresholdsDto,
  PipelineThresholdsDto,
  ResolveIncidentDto,
} from './incidents.dto';

const PROFILE = {
  type: 'object',
  description:
    'Run profile: runId, source (landed-sample, synthetic-sample, job), recordCount, columns[] (name, inferredType, ' +
    'nullRate, distinct, quantiles, lengthQuantiles, topK; no values from sensitive-looking columns, and none for a ' +
    "caller without `search:query` on the database of the pipeline's destination), dqFailures, " +
    'dqPassRate, durationMs, scriptSha, tapVersion (tap incidents: the stored script version run), pipelineVersion, ' +
    'sampledRows, computedAt',
};
const EVIDENCE_SCHEMA = {
  type: 'object',
  properties: {
    baseline: { ...PROFILE, nullable: true, description: 'Null while the evidence is computed' },
    candidate: { ...PROFILE, nullable: true, description: 'Null while the evidence is computed' },
    real: {
      ...PROFILE,
      nullable: true,
      description: 'The first real job that ran the change (null until one has)',
    },
    diff: {
      type: 'object',
      nullable: true,
      description:
        'Null while the evidence is computed. ' +
        'columnsAdded, columnsRemoved, typeChanges, recordDeltaPct, recordDeltaVsMeanOfLastN, lastN, nullRateDeltas, quantileShift, dqPassRateDelta',
    },
    blastRadius: {
      type: 'object',
      nullable: true,
      description:
        'Null only when the pipeline is gone. ' +
        'downstreamPipelines (other pipelines loading the same table, collection, topic or endpoint), ' +
        "downstreamDatasets (the pipeline's destinations and sinks, {kind, coords}), ucTables, consumersFromContracts " +
        '(the taps feeding the pipeline, `tap:<name>`), lastDownstreamRunAt (latest job of those pipelines), ' +
        'agentsThatQueriedLast7d, secretName',
    },
    thresholds: {
      type: 'object',
      description:
        "maxRecordDeltaPct, allowColumnRemoval, allowTypeChange, minDqPassRate, maxNullRateIncrease: the pipeline's " +
        '(a tap: the pipeline it feeds) as set with PUT /pipelines/{name}/incident-thresholds, else the defaults',
    },
    checks: { type: 'array', items: { type: 'object', description: 'name, passed, observed, limit' } },
    verdict: { type: 'string', enum: ['pending', 'pass', 'fail', 'needs-human'] },
    computedAt: {
      type: 'string',
      format: 'date-time',
      nullable: true,
      description: 'Null while the evidence is computed',
    },
    scriptVersions: {
      type: 'array',
      description: 'Pipeline incidents only (absent for tap incidents)',
      items: { type: 'object', description: 'kind, before, after' },
    },
  },
};

@ApiTags('incidents')
@Controller('incidents')
export class IncidentsController {
  constructor(
    private readonly incidents: IncidentsService,
    private readonly pipelines: PipelinesService,
  ) {}

  @Get()
  @Requires('pipeline:read', 'filtered')
  @ApiOperation({
    summary: 'Incidents, newest first',
    description:
      'A CodeGen script that replaces an earlier version opens an incident of its pipeline, and a tap script change ' +
      '(save, generate, fix, review, optimize, migrate) one of its tap (`subject: tap`), with evidence computed by ' +
      'platform code (docs/incidents.md). Listed: incidents of pipelines the caller may read (`pipeline:read`) and ' +
      'of taps it may read (`tap:read`).',
  })
  @ApiOkResponse({ type: [IncidentListItemDto] })
  @ApiErrors(400)
  async list(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Query() q: IncidentQueryDto,
  ): Promise<IncidentListItem[]> {
    const items = await this.incidents.list(env, q, access);
    const defs = new Map(
      (await this.pipelines.listWithDefinitions(env)).map((p) => [p.item.name, p.definition]),
    );
    const ofPipelines = access.filter(
      items.filter((i) => i.subject === 'pipeline' && defs.has(i.subjectName)),
      'read',
      'pipeline',
      (i) => pipelineFields(defs.get(i.subjectName)!),
    );
    return items.filter((i) => i.subject === 'tap' || ofPipelines.includes(i));
  }

  @Get(':id')
  @Requires('pipeline:read', incidentInPath('id'))
  @ApiOperation({ summary: 'One incident', description: "A tap's needs `tap:read` on the tap as well." })
  @ApiOkResponse({ type: IncidentDto })
  @ApiErrors(404)
  get(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param('id') id: string,
  ): Promise<Incident> {
    return this.incidents.get(env, id, access);
  }

  @Get(':id/evidence')
  @Requires('pipeline:read', incidentInPath('id'))
  @ApiOperation({
    summary: "An incident's evidence (spec Resources, Incident evidence)",
    description:
      "Values quoted from rows (columns' `topK` and `quantiles`) only for a caller who may read the rows of the " +
      "pipeline's destination (`search:query` on its database; a tap's: the pipeline it feeds); others get the " +
      "counts, rates, types, checks and verdict. A tap's incident needs `tap:read` on the tap as well. " +
      'While the evidence is still computed (a second or so after the change): 200 with `verdict` `pending` and the ' +
      'parts known so far (`scriptVersions`, `thresholds`, `blastRadius`); `baseline`, `candidate`, `diff` and ' +
      '`computedAt` are null and `checks` is empty until then.',
  })
  @ApiOkResponse({ schema: EVIDENCE_SCHEMA })
  @ApiErrors(404)
  evidence(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param('id') id: string,
  ): Promise<Evidence | PendingEvidence> {
    return this.incidents.evidence(env, id, access);
  }

  @Post(':id/verify')
  @HttpCode(200)
  @Requires('pipeline:update', incidentInPath('id'))
  @ApiOperation({
    summary: 'Re-run the candidate and recompute the evidence',
    description:
      'On the rows the pipeline last landed. A `fail` verdict restores the earlier script version (as a new ' +
      'version, origin restore-version) while the change is still live; `scriptVersions[].after` then equals ' +
      "`before`. A tap's incident is recomputed only (`tap:update` on the tap as well).",
  })
  @ApiOkResponse({ type: IncidentDto })
  @ApiErrors(404, { 409: 'Resolved, or the script changed since the incident' })
  verify(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param('id') id: string,
  ): Promise<Incident> {
    return this.incidents.verify(env, id, access);
  }

  @Post(':id/resolve')
  @HttpCode(200)
  @Requires('pipeline:update', incidentInPath('id'))
  @ApiOperation({ summary: 'Mark an incident resolved (its verdict and evidence stay)' })
  @ApiOkResponse({ type: IncidentDto })
  @ApiErrors(404)
  resolve(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param('id') id: string,
    @Body() body: ResolveIncidentDto,
  ): Promise<Incident> {
    return this.incidents.resolve(env, id, body.resolution ?? null, access);
  }
}

/** A pipeline's own incident thresholds (the evidence of its incidents and of its taps' is checked against them). */
@ApiTags('incidents')
@Controller('pipelines/:name/incident-thresholds')
export class IncidentThresholdsController {
  constructor(private readonly incidents: IncidentsService) {}

  @Get()
  @Requires('pipeline:read', pipelineInPath('name'))
  @ApiOperation({
    summary: "The thresholds a pipeline's incident evidence is checked against",
    description: '`custom` false: the built-in defaults.',
  })
  @ApiOkResponse({ type: PipelineThresholdsDto })
  @ApiErrors(404)
  get(@RequestEnvironment() env: string, @Param('name') name: string): Promise<PipelineThresholdsDto> {
    return this.incidents.thresholds(env, name);
  }

  @Put()
  @Requires('pipeline:update', pipelineInPath('name'))
  @ApiOperation({
    summary: "Set a pipeline's incident thresholds",
    description:
      'Fields given replace the current values, the others stay; the next evidence computed (a new incident or a ' +
      'verification) uses them. Evidence already computed keeps the thresholds it was checked against.',
  })
  @ApiOkResponse({ type: PipelineThresholdsDto })
  @ApiErrors(400, 404)
  set(
    @RequestEnvironment() env: string,
    @Param('name') name: string,
    @Body() body: IncidentThresholdsDto,
  ): Promise<PipelineThresholdsDto> {
    return this.incidents.setThresholds(env, name, body);
  }

  @Delete()
  @Requires('pipeline:update', pipelineInPath('name'))
  @ApiOperation({ summary: "Back to the built-in thresholds for a pipeline's incidents" })
  @ApiOkResponse({ type: PipelineThresholdsDto })
  @ApiErrors(404)
  clear(@RequestEnvironment() env: string, @Param('name') name: string): Promise<PipelineThresholdsDto> {
    return this.incidents.clearThresholds(env, name);
  }
}
