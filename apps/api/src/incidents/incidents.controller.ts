import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Evidence, Incident, IncidentListItem, IncidentsService, PendingEvidence } from '@tapyard/incidents';
import { PipelinesService } from '@tapyard/pipelines';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess, RequestEnvironment } from '../http/environment.decorator';
import { Access } from '@tapyard/auth';
import { Requires } from '../auth/access-rule';
import { incidentInPath, pipelineFields } from '../auth/scopes';
import { IncidentDto, IncidentListItemDto, IncidentQueryDto, ResolveIncidentDto } from './incidents.dto';

const PROFILE = {
  type: 'object',
  description:
    'Run profile: runId, source (landed-sample, synthetic-sample, job), recordCount, columns[] (name, inferredType, ' +
    'nullRate, distinct, quantiles, lengthQuantiles, topK; no values from sensitive-looking columns, and none for a ' +
    'caller without `search:query` on the pipeline), dqFailures, ' +
    'dqPassRate, durationMs, scriptSha, tapVersion, pipelineVersion, sampledRows, computedAt',
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
        'downstreamPipelines, downstreamDatasets, ucTables, consumersFromContracts, lastDownstreamRunAt, agentsThatQueriedLast7d, secretName',
    },
    thresholds: {
      type: 'object',
      description:
        'maxRecordDeltaPct, allowColumnRemoval, allowTypeChange, minDqPassRate, maxNullRateIncrease',
    },
    checks: { type: 'array', items: { type: 'object', description: 'name, passed, observed, limit' } },
    verdict: { type: 'string', enum: ['pending', 'pass', 'fail', 'needs-human'] },
    computedAt: {
      type: 'string',
      format: 'date-time',
      nullable: true,
      description: 'Null while the evidence is computed',
    },
    scriptVersions: { type: 'array', items: { type: 'object', description: 'kind, before, after' } },
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
      'A CodeGen script that replaces an earlier version opens an incident of its pipeline, with evidence computed ' +
      'by platform code (README "Incidents"). Only incidents of pipelines the caller may read are listed.',
  })
  @ApiOkResponse({ type: [IncidentListItemDto] })
  @ApiErrors(400)
  async list(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Query() q: IncidentQueryDto,
  ): Promise<IncidentListItem[]> {
    const items = await this.incidents.list(env, q);
    const defs = new Map(
      (await this.pipelines.listWithDefinitions(env)).map((p) => [p.item.name, p.definition]),
    );
    const known = items.filter((i) => defs.has(i.subjectName));
    return access.filter(known, 'read', 'pipeline', (i) => pipelineFields(defs.get(i.subjectName)!));
  }

  @Get(':id')
  @Requires('pipeline:read', incidentInPath('id'))
  @ApiOperation({ summary: 'One incident' })
  @ApiOkResponse({ type: IncidentDto })
  @ApiErrors(404)
  get(@RequestEnvironment() env: string, @Param('id') id: string): Promise<Incident> {
    return this.incidents.get(env, id);
  }

  @Get(':id/evidence')
  @Requires('pipeline:read', incidentInPath('id'))
  @ApiOperation({
    summary: "An incident's evidence (spec Resources, Incident evidence)",
    description:
      "Values quoted from the pipeline's rows (columns' `topK` and `quantiles`) only for a caller who may read those " +
      "rows (`search:query` over the pipeline's scope); others get the counts, rates, types, checks and verdict. " +
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
    return this.incidents.evidence(env, id, access.caller);
  }

  @Post(':id/verify')
  @HttpCode(200)
  @Requires('pipeline:update', incidentInPath('id'))
  @ApiOperation({
    summary: 'Re-run the candidate and recompute the evidence',
    description:
      'On the rows the pipeline last landed. A `fail` verdict restores the earlier script version (as a new ' +
      'version, origin restore-version) while the change is still live; `scriptVersions[].after` then equals ' +
      '`before`.',
  })
  @ApiOkResponse({ type: IncidentDto })
  @ApiErrors(404, { 409: 'Resolved, or the script changed since the incident' })
  verify(@RequestEnvironment() env: string, @Param('id') id: string): Promise<Incident> {
    return this.incidents.verify(env, id);
  }

  @Post(':id/resolve')
  @HttpCode(200)
  @Requires('pipeline:update', incidentInPath('id'))
  @ApiOperation({ summary: 'Mark an incident resolved (its verdict and evidence stay)' })
  @ApiOkResponse({ type: IncidentDto })
  @ApiErrors(404)
  resolve(
    @RequestEnvironment() env: string,
    @Param('id') id: string,
    @Body() body: ResolveIncidentDto,
  ): Promise<Incident> {
    return this.incidents.resolve(env, id, body.resolution ?? null);
  }
}
