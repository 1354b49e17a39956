import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { SchemaDiscoveryService, UploadService } from '@tapyard/intake';
import { JobRowsService, PipelineDeletionService } from '@tapyard/pipeline-deletion';
import { PipelineConfigDto, PipelinesService } from '@tapyard/pipelines';
import { PipelineDefinition } from '@tapyard/model';
import { PipelineAdviceService } from '@tapyard/pipeline-advice';
import { CodegenService } from '@tapyard/codegen';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess, RequestEnvironment, RequestSignal } from '../http/environment.decorator';
import { Access } from '@tapyard/auth';
import { Requires } from '../auth/access-rule';
import { pipelineFields, pipelineInBody, pipelineInQuery } from '../auth/scopes';
import {
  DeletePipelineQueryDto,
  DeletePipelineResultDto,
  GenerateFormDto,
  JobRowsParamsDto,
  PipelineListItemDto,
  PipelineQueryDto,
  ProfileFormDto,
  RemovedJobRowsDto,
  SavePipelineResultDto,
  UploadFormDto,
} from './pipelines.dto';

@ApiTags('pipelines')
@Controller()
export class PipelinesController {
  constructor(
    private readonly pipelines: PipelinesService,
    private readonly uploads: UploadService,
    private readonly discovery: SchemaDiscoveryService,
    private readonly deletion: PipelineDeletionService,
    private readonly jobRows: JobRowsService,
    private readonly advice: PipelineAdviceService,
    private readonly codegen: CodegenService,
  ) {}

  @Post('pipeline')
  @HttpCode(200)
  @Requires('pipeline:update', pipelineInBody)
  @ApiOperation({
    summary: 'Create or update a pipeline',
    description:
      'The version starts at 1 and increases by one with every change that alters the definition. Destinations ' +
      'are confined (README "Destination confinement"): never the platform\'s schemas tapyard and tapyard_meta ' +
      '(nor pg_*, information_schema), MongoDB admin, config, local or tapyard_internal, or a bucket of another ' +
      'environment; a tenant (multi-tenant mode) only its own schema t_<tenant>, MongoDB database <tenant> and ' +
      'bucket <tenant>-output, which are also its defaults. A destination outside that is 400 naming it. A section ' +
      'that names a secret (kafka, activemq, rest, snowflake, databricks) needs secret:use: the platform sends its ' +
      'credentials to the address the pipeline gives. A PostgreSQL table or MongoDB collection that other ' +
      'pipelines of the environment already load into needs pipeline:update over each of them too (a load there ' +
      'can replace, overwrite or add to their rows): otherwise 403 naming the table or collection, never the ' +
      'other pipeline.',
  })
  @ApiOkResponse({ type: SavePipelineResultDto })
  @ApiErrors({
    400: 'Invalid configuration, or a destination outside the caller’s confinement; `details` names each field',
    403:
      'A capability the caller lacks: secret:use for a section naming a secret, or pipeline:update over a ' +
      'pipeline outside its scope that loads into the same table or collection (named in the message)',
    409: 'The pipeline is being deleted (repeat the DELETE)',
  })
  async save(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: PipelineConfigDto,
  ): Promise<SavePipelineResultDto> {
    const saved = await this.pipelines.save(env, body, access);
    this.codegen.afterSave(env, saved.name);
    return { status: 'ok', ...saved };
  }

  @Get('pipeline')
  @Requires('pipeline:read', pipelineInQuery('pipeline'))
  @ApiOperation({ summary: 'The full configuration of a pipeline, with its definition version' })
  @ApiOkResponse({ type: PipelineConfigDto })
  @ApiErrors(404)
  async get(
    @RequestEnvironment() env: string,
    @Query() q: PipelineQueryDto,
  ): Promise<PipelineDefinition & { version: number; updatedAt: string }> {
    const p = await this.pipelines.get(env, q.pipeline);
    return { ...p.definition, version: p.version, updatedAt: new Date(p.updatedAt).toISOString() };
  }

  @Get('pipelines')
  @Requires('pipeline:read', 'filtered')
  @ApiOperation({ summary: 'Every pipeline of the environment' })
  @ApiOkResponse({ type: [PipelineListItemDto] })
  async list(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
  ): Promise<PipelineListItemDto[]> {
    const all = await this.pipelines.listWithDefinitions(env);
    return access.filter(all, 'read', 'pipeline', (p) => pipelineFields(p.definition)).map((p) => p.item);
  }

  @Delete('pipeline')
  @Requires('pipeline:delete', pipelineInQuery('pipeline'))
  @ApiOperation({
    summary: 'Delete a pipeline',
    description:
      'With deleteData=true also drops the data this pipeline created (recorded when it created it: its table and ' +
      '_rejects table, its collection and _rejects collection, the job folders of its files) and clears the ' +
      'document ledgers (with their staged objects) of the taps that target it. A table or collection that ' +
      'existed before the pipeline first loaded into it is left in place and listed in `skipped`. Steps: mark the ' +
      'pipeline as being deleted (no loads, no changes), drop, clear ledgers, delete the configuration. A step ' +
      'that fails (409 for a table another session holds for more than 5 s) leaves the pipeline marked; repeat ' +
      'the DELETE to finish.',
  })
  @ApiOkResponse({ type: DeletePipelineResultDto })
  @ApiErrors(404, {
    409: 'A table in use, or a load creating objects: nothing more was dropped; repeat the DELETE',
  })
  async remove(
    @RequestEnvironment() env: string,
    @Query() q: DeletePipelineQueryDto,
  ): Promise<DeletePipelineResultDto> {
    const deleteData = q.deleteData === true;
    const report = await this.deletion.delete(env, q.pipeline, deleteData);
    return { status: 'ok', pipeline: q.pipeline, dataDeleted: deleteData, ...report };
  }

  @Delete('pipeline/jobs/:pipelineToken/rows')
  @Requires('pipeline:delete', 'in-handler')
  @ApiOperation({
    summary: "Remove one job's rows",
    description:
      'Takes back what one ended job loaded: rows carrying its _tapyard_load_id in tables and collections, its ' +
      'job folder in the object store, and the rows it rejected. Sinks cannot take back what they sent. Needs ' +
      'pipeline:delete on the job’s pipeline as it was when the job began (a later pipeline of the same name ' +
      'does not count); a job outside the caller’s tenant or scope is answered 404. With ' +
      'writeMode merge, the rows the job last wrote are removed (the versions they replaced are gone).',
  })
  @ApiOkResponse({ type: RemovedJobRowsDto })
  @ApiErrors({
    404: 'No job of the caller has that token',
    409: 'The job is still running, or its pipeline predates load ids, or the pipeline is being deleted',
  })
  async removeJobRows(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Param() params: JobRowsParamsDto,
  ): Promise<RemovedJobRowsDto> {
    const { removed } = await this.jobRows.remove(env, params.pipelineToken, access);
    return { status: 'ok', pipelineToken: params.pipelineToken, removed };
  }

  @Post('pipeline/upload')
  @HttpCode(200)
  @Requires('pipeline:upload', 'in-handler')
  @Header('content-type', 'text/plain; charset=utf-8')
  @ApiOperation({
    summary: 'Upload a file into a pipeline',
    description:
      'Streams the file to the spool (never into memory) and queues a job. Answers the pipeline token as text/plain; ' +
      'follow it with GET /pipeline/status?pipelinetoken=…&withrollup=true. Archives (.zip, .jar, .tar, .tar.gz, .tgz, .gz) ' +
      'are staged to the raw bucket and answered 200 with an empty body; FileNotifier makes each file inside its own job ' +
      '(follow them by publishertoken). Other compressions are 415; archives without an object store are 503. The content ' +
      'decides, not the name: a PDF, an image or other binary data sent to a CSV, JSON or XML pipeline is 415 naming ' +
      'the type detected (magic bytes, NUL and control bytes, UTF-16).',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: UploadFormDto })
  @ApiProduces('text/plain')
  @ApiOkResponse({
    description: 'The pipeline token',
    schema: { type: 'string', example: '6f1c2d9e-0c7a-4c59-9e55-2f7f1b7e0a11' },
  })
  @ApiErrors({
    400: 'Missing file or pipeline field, empty file',
    404: 'Unknown pipeline',
    413: 'File over UPLOAD_LIMIT',
    415: 'Not multipart, a compressed file, or a file whose content is not CSV, JSON or XML (e.g. a PDF or an image) for a non-document pipeline',
  })
  upload(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Req() req: Request,
  ): Promise<string> {
    return this.uploads.upload(env, req, access);
  }

  @Post('pipeline/generate')
  @HttpCode(200)
  @Requires('pipeline:create')
  @ApiOperation({
    summary: 'Propose a pipeline configuration from a sample file',
    description:
      'CSV/TSV: deterministic type inference over the first 1,000 rows (boolean, int, bigint, double, decimal, string, date, ' +
      'timestamp; values with leading zeros stay strings), header detection when `header` is absent, normalised column names. ' +
      'Fractional columns written with a fixed 2-4 places (money, quantities) are `decimal` with `precision` and `scale`, ' +
      "other fractional ones `double`; single-precision `float` is never proposed. When at most 5% of a column's values " +
      'do not fit the type the others share, that type is proposed and they are counted. `typeNotes[]` ' +
      '(`{column, type, reason, outliers, examples}`, absent when empty) says why for such columns; POST /pipeline accepts ' +
      'and ignores it, so the proposal registers as is. ' +
      'JSON and XML: a single `_json` / `_xml` string field. With a model provider (secret `ai`, feature `advice`), ' +
      '`advice` adds a description and a semantic hint per field (the model sees column names, inferred types and up to ' +
      'three values of columns whose names do not look sensitive); it never changes a type. `advice: {error}` when ' +
      'the model could not be asked; absent without a provider.',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: GenerateFormDto })
  @ApiOkResponse({ description: 'A partial pipeline configuration, ready for POST /pipeline' })
  @ApiErrors(400, {
    415: 'The content is not CSV, JSON or XML (e.g. a PDF or an image): the type detected is named',
  })
  async generate(
    @RequestEnvironment() env: string,
    @Req() req: Request,
    @RequestSignal() signal: AbortSignal,
  ): Promise<unknown> {
    const examples: string[][] = [];
    const proposal = await this.discovery.generate(env, req, examples);
    const advice = await this.advice.forGenerate(
      env,
      proposal.source.schemaProperties.fields,
      examples,
      signal,
    );
    return advice ? { ...proposal, advice } : proposal;
  }

  @Post('pipeline/profile')
  @HttpCode(200)
  @Requires('pipeline:create')
  @ApiOperation({
    summary: 'Profile a sample of a CSV file',
    description:
      'Per-column statistics (null rate, distinct count, min/max, quantiles, top values, inferred type), quality issues, ' +
      'recommendations and suggested data-quality rules, computed by code over the first `sampleSize` rows (default 200). ' +
      'Types are inferred as by generate: a column gets `precision`/`scale` when decimal and `typeNote` ' +
      '(`{reason, outliers, examples}`) when its type needs explaining, its statistics then leave the outliers out. Range ' +
      'rules are proposed only when the sample is the whole file, and never for id-like or monotonic columns. ' +
      'With a model provider (feature `advice`), `advice` adds model-written `recommendations` and `suggestedRules`, each ' +
      'rule kept only when the pipeline rule schema accepts it against the inferred schema (`refusedRules` says why ' +
      'not); the model sees the column statistics, and top values only of columns whose names do not look sensitive.',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: ProfileFormDto })
  @ApiOkResponse({ description: 'The profile' })
  @ApiErrors(400, {
    415: 'The content is not a CSV sample (e.g. a PDF or an image): the type detected is named',
  })
  async profile(
    @RequestEnvironment() env: string,
    @Req() req: Request,
    @RequestSignal() signal: AbortSignal,
  ): Promise<unknown> {
    const profile = await this.discovery.profile(req);
    const advice = await this.advice.forProfile(env, profile, signal);
    return advice ? { ...profile, advice } : profile;
  }
}
