import { Body, Controller, Delete, Get, HttpCode, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { cronFromEnglish } from '@tapyard/schedules';
import { CronResult, TapAuthoringService } from '@tapyard/tap-authoring';
import {
  LedgerEntry,
  LedgerService,
  RunLogEntry,
  RunResult,
  TapConfig,
  TapConfigDto,
  TapRunner,
  TapStates,
  TapStateVersion,
  TapStateView,
  TapsRepository,
  TapsService,
  TapWithScript,
  TestResult,
  TestTapDto,
} from '@tapyard/taps';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestAccess, RequestEnvironment, RequestSignal } from '../http/environment.decorator';
import { Access } from '@tapyard/auth';
import { Requires } from '../auth/access-rule';
import { tapFields, tapInBody, tapInQuery, tapNamedInBody } from '../auth/scopes';
import {
  CronRequestDto,
  CronResultDto,
  DeleteTapResultDto,
  LedgerClearResultDto,
  LedgerEntryDto,
  LedgerEntryQueryDto,
  MigrateStorageDto,
  MigrateStorageResultDto,
  RunLogEntryDto,
  RunResultDto,
  RunTapDto,
  SetTapStateDto,
  TapDto,
  TapListQueryDto,
  TapQueryDto,
  TapStateDto,
  TapStateVersionDto,
  TapWithScriptDto,
  TestQueryDto,
  TestResultDto,
} from './taps.dto';

@ApiTags('taps')
@Controller()
export class TapsController {
  constructor(
    private readonly taps: TapsService,
    private readonly runner: TapRunner,
    private readonly ledger: LedgerService,
    private readonly repo: TapsRepository,
    private readonly authoring: TapAuthoringService,
    private readonly states: TapStates,
  ) {}

  @Get('taps')
  @Requires('tap:read', 'filtered')
  @ApiOperation({ summary: 'Every tap of the environment, or of one catalog' })
  @ApiOkResponse({ type: [TapDto] })
  async list(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Query() q: TapListQueryDto,
  ): Promise<TapConfig[]> {
    const catalog = q.catalog === undefined ? undefined : q.catalog.trim() || null;
    const taps = (await this.taps.list(env)).filter((t) => catalog === undefined || t.catalog === catalog);
    return access.filter(taps, 'read', 'tap', tapFields);
  }

  @Get('tap')
  @Requires('tap:read', tapInQuery('name'))
  @ApiOperation({
    summary: 'One tap with its script',
    description:
      '`script` is the body of the object at `scriptPath`. `scriptMissing: true` (and `script: null`) only when ' +
      '`scriptPath` is set but the object is gone; a tap never given a script has `script: null` and no `scriptMissing`.',
  })
  @ApiOkResponse({ type: TapWithScriptDto })
  @ApiErrors(404)
  get(@RequestEnvironment() env: string, @Query() q: TapQueryDto): Promise<TapWithScript> {
    return this.taps.getWithScript(env, q.name);
  }

  @Post('tap')
  @HttpCode(200)
  @Requires('tap:update', tapInBody)
  @ApiOperation({
    summary: 'Create or update a tap',
    description:
      'Fields left out keep their stored values. `script` stores a new version at tap-scripts/<name>_<suffix>.py and ' +
      'points `scriptPath` at it (earlier versions stay for rollback; `scriptPath` may name one of them). ' +
      '`cronExpression` is Quartz (seconds first) and is validated; `tapType` cannot change once set. A document tap ' +
      'must target a pipeline with source.fileAttributes.unstructuredAttributes and a vector-store destination.',
  })
  @ApiOkResponse({ type: TapDto })
  @ApiErrors({
    400: 'Invalid name, cron expression or package; tapType change; document-tap compatibility violation',
  })
  save(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: TapConfigDto,
  ): Promise<TapConfig> {
    return this.taps.save(env, body, access);
  }

  @Delete('tap')
  @Requires('tap:delete', tapInQuery('name'))
  @ApiOperation({
    summary: 'Delete a tap',
    description:
      'Deletes the configuration, its run history and every script version; document taps also lose ' +
      'their ledger and staged documents.',
  })
  @ApiOkResponse({ type: DeleteTapResultDto })
  @ApiErrors(404)
  async remove(@RequestEnvironment() env: string, @Query() q: TapQueryDto): Promise<DeleteTapResultDto> {
    const { ledgerEntriesDeleted } = await this.taps.delete(env, q.name);
    return { status: 'ok', tap: q.name, ledgerEntriesDeleted };
  }

  @Post('tap/test')
  @HttpCode(200)
  @Requires('tap:run', tapInBody)
  @ApiOperation({
    summary: 'Test a tap configuration without saving anything',
    description:
      'Runs the script (an inline `script` wins over `scriptPath`) in the sandbox and returns at most 20 records, the ' +
      'count, the columns (normalised for csv) and the logs. Failures of the script are in `error`.',
  })
  @ApiOkResponse({ type: TestResultDto })
  @ApiErrors(400, { 409: 'No script given and none stored' })
  async test(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Query() q: TestQueryDto,
    @Body() body: TestTapDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<TestResult> {
    const { tap, result } = await this.runner.testAs(access, env, body, q.testLimit ?? 0);
    const script = body.script ?? (await this.taps.liveScript(env, tap));
    return { ...result, aiExplanation: await this.authoring.explain(env, tap, script, result, signal) };
  }

  @Post('tap/run')
  @HttpCode(200)
  @Requires('tap:run', tapInBody)
  @ApiOperation({
    summary: 'Run a saved tap',
    description:
      '`run`: records go to `targetPipeline` through the ingestion path under one publisher token (follow with ' +
      'GET /pipeline/status?publishertoken=…&withrollup=true); a second run within 5 s is `skipped` (debounced). ' +
      '`test`: read-only, at most 20 records, never debounced.',
  })
  @ApiOkResponse({ type: RunResultDto })
  @ApiErrors(400, 404, { 409: 'The tap has no script, or its script object is missing' })
  async run(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: RunTapDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<RunResult> {
    const result = await this.runner.run(env, body.name, { mode: body.mode, trigger: 'manual', access });
    // A diagnosis for a failed run, or one whose script yielded nothing (no columns seen).
    const yieldedNothing = result.recordCount === 0 && result.columns === null;
    if (result.status === 'skipped' || (result.error === null && !yieldedNothing)) return result;
    const tap = await this.taps.getWithScript(env, body.name);
    return { ...result, aiExplanation: await this.authoring.explain(env, tap, tap.script, result, signal) };
  }

  @Post('tap/migrate-storage')
  @HttpCode(200)
  @Requires('tap:update', tapNamedInBody)
  @ApiOperation({
    summary: "Move a tap's script between the object store and the code repository",
    description:
      '`target` minio or github (without it, the other backend). Into the repository: the live script is ' +
      "committed at `<pathPrefix>taps/<tap>.py` (secret 'code-repository') and runs execute that commit; out " +
      'of it: the file at the recorded commit becomes a new object version. Built-in objects are never deleted. ' +
      'Already on the target: `migrated: false`, nothing changes.',
  })
  @ApiOkResponse({ type: MigrateStorageResultDto })
  @ApiErrors(404, {
    400: "No 'code-repository' secret for target github",
    409: 'The tap has no script to move',
  })
  migrateStorage(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: MigrateStorageDto,
  ): Promise<MigrateStorageResultDto> {
    return this.taps.migrateStorage(env, body.tapName, body.target, access);
  }

  @Get('tap/runs')
  @Requires('tap:read', tapInQuery('name'))
  @ApiOperation({
    summary: 'Run history of a tap: the last 50 runs, most recent first (manual and scheduled)',
  })
  @ApiOkResponse({ type: [RunLogEntryDto] })
  @ApiErrors(404)
  async runs(@RequestEnvironment() env: string, @Query() q: TapQueryDto): Promise<RunLogEntry[]> {
    await this.taps.get(env, q.name);
    return this.repo.runs(env, q.name);
  }

  @Post('tap/cron')
  @HttpCode(200)
  @Requires('tap:read', 'none')
  @ApiOperation({
    summary: 'Plain English to a Quartz cron expression',
    description:
      'Deterministic for common phrasings (every N seconds/minutes/hours, daily at, weekdays, weekly on, monthly on ' +
      'day N, last day of month, ...), with or without a model provider: these need tap:read. Other phrasings go to ' +
      "the model (secret 'ai', feature cron), which spends the provider's budget and so needs tap:update (in any " +
      'scope); its answer is accepted only when it is a valid Quartz expression that fires again. ' +
      'A description written as a cron expression (five to seven fields) is validated as Quartz and explained, ' +
      'never sent to the model: 400 with the reason when it is not valid Quartz. ' +
      'Returns the expression, an explanation and the next 5 fire times.',
  })
  @ApiOkResponse({ type: CronResultDto })
  @ApiErrors({
    400: 'Unknown time zone, or a description written as an invalid Quartz expression',
    403: 'A phrasing only the model could read, and the caller lacks tap:update',
    422: 'Phrasing not understood (no provider), or the model gave no valid Quartz expression twice',
  })
  cron(
    @RequestEnvironment() env: string,
    @RequestAccess() access: Access,
    @Body() body: CronRequestDto,
    @RequestSignal() signal: AbortSignal,
  ): Promise<CronResult> {
    const timezone = body.timezone ?? 'UTC';
    // Reading a schedule is for any reader, but asking the model spends the provider's budget: that is
    // authoring, as brainstorming is. A phrase the parser knows never reaches the model.
    if (cronFromEnglish(body.description, timezone) === null)
      access.requireSome('update', 'tap', 'to have the model read a schedule the platform does not know');
    return this.authoring.cron(env, body.description, timezone, signal);
  }

  @Get('tap/ledger')
  @Requires('tap:read', tapInQuery('name'))
  @ApiOperation({ summary: 'Document ledger of a tap: one entry per processed document' })
  @ApiOkResponse({ type: [LedgerEntryDto] })
  @ApiErrors(404)
  async ledgerList(@RequestEnvironment() env: string, @Query() q: TapQueryDto): Promise<LedgerEntry[]> {
    await this.taps.get(env, q.name);
    return this.ledger.list(env, q.name);
  }

  @Delete('tap/ledger/entry')
  @Requires('tap:update', tapInQuery('name'))
  @ApiOperation({ summary: 'Forget one document (and its staged object): the next run processes it again' })
  @ApiOkResponse({ type: LedgerEntryDto })
  @ApiErrors(404)
  async ledgerRemove(
    @RequestEnvironment() env: string,
    @Query() q: LedgerEntryQueryDto,
  ): Promise<LedgerEntry> {
    await this.taps.get(env, q.name);
    return this.ledger.removeEntry(env, q.name, q.uri);
  }

  @Delete('tap/ledger')
  @Requires('tap:update', tapInQuery('name'))
  @ApiOperation({ summary: 'Clear the ledger and staged objects: the next run re-scans every document' })
  @ApiOkResponse({ type: LedgerClearResultDto })
  @ApiErrors(404)
  async ledgerClear(
    @RequestEnvironment() env: string,
    @Query() q: TapQueryDto,
  ): Promise<LedgerClearResultDto> {
    await this.taps.get(env, q.name);
    return { status: 'ok', deleted: await this.ledger.clear(env, q.name) };
  }

  @Get('tap/state')
  @Requires('tap:read', tapInQuery('name'))
  @ApiOperation({
    summary: "A tap's incremental state: what the next run's fetch(state) gets",
    description:
      "The last committed state. A run's new state is committed only once the load it fed committed (every job of " +
      'the run ended loaded); a failed or partial load keeps the old one.',
  })
  @ApiOkResponse({ type: TapStateDto })
  @ApiErrors(404)
  async state(@RequestEnvironment() env: string, @Query() q: TapQueryDto): Promise<TapStateView> {
    await this.taps.get(env, q.name);
    return this.states.current(env, q.name);
  }

  @Put('tap/state')
  @Requires('tap:update', tapInQuery('name'))
  @ApiOperation({
    summary: "Set or reset a tap's state",
    description:
      '`{state: {...}}` sets it (e.g. to re-load from a date), `{state: null}` resets it; a new version either way.',
  })
  @ApiOkResponse({ type: TapStateDto })
  @ApiErrors(404, { 400: 'state is not a JSON object or null, or larger than 64 KiB' })
  async setState(
    @RequestEnvironment() env: string,
    @Query() q: TapQueryDto,
    @Body() body: SetTapStateDto,
  ): Promise<TapStateView> {
    await this.taps.get(env, q.name);
    return this.states.set(env, q.name, body.state);
  }

  @Get('tap/state/history')
  @Requires('tap:read', tapInQuery('name'))
  @ApiOperation({
    summary: "Versions of a tap's state, newest first",
    description: `Committed, pending (waiting for their load) and discarded versions, with the jobs each waited for; the last 100 and the current one are kept.`,
  })
  @ApiOkResponse({ type: [TapStateVersionDto] })
  @ApiErrors(404)
  async stateHistory(@RequestEnvironment() env: string, @Query() q: TapQueryDto): Promise<TapStateVersion[]> {
    await this.taps.get(env, q.name);
    return this.states.history(env, q.name);
  }
}
