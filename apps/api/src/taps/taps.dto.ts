import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  ValidateIf,
} from 'class-validator';
import { TAP_NAME_PATTERN } from '@tapyard/taps';

const NAME_MESSAGE = 'name must be a tap name (letters, digits, _ and -)';

export class TapQueryDto {
  @ApiProperty({ example: 'github_issues' })
  @IsString()
  @Matches(TAP_NAME_PATTERN, { message: NAME_MESSAGE })
  name!: string;
}

export class TapListQueryDto {
  @ApiPropertyOptional({
    example: 'engineering',
    description: 'Only taps of this catalog; empty: uncataloged ones',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(200)
  catalog?: string;
}

export class LedgerEntryQueryDto extends TapQueryDto {
  @ApiProperty({ example: 'https://wiki.example.com/page/42' })
  @IsString()
  @MaxLength(4000)
  uri!: string;
}

export class TestQueryDto {
  @ApiPropertyOptional({
    example: 100,
    description:
      '> 0 sets SERVICE_TAP_TEST_LIMIT in the script process; 0 or less (or absent): no cap (spec)',
  })
  @OptionalNotNull()
  @Type(() => Number)
  @IsInt({ message: 'testLimit must be an integer' })
  @Max(1_000_000_000)
  testLimit?: number;
}

export class RunTapDto {
  @ApiProperty({ example: 'github_issues' })
  @IsString()
  @Matches(TAP_NAME_PATTERN, { message: NAME_MESSAGE })
  name!: string;

  @ApiProperty({ enum: ['run', 'test'], example: 'run' })
  @IsIn(['run', 'test'], { message: 'mode must be run or test' })
  mode!: 'run' | 'test';
}

export class CronRequestDto {
  @ApiProperty({ example: 'every weekday at 7am' })
  @IsString()
  @MaxLength(500)
  description!: string;

  @ApiPropertyOptional({
    example: 'UTC',
    default: 'UTC',
    description: 'IANA time zone of the times in the text',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(64)
  timezone?: string;
}

export class CronResultDto {
  @ApiProperty({ example: '0 0 7 ? * MON-FRI' }) cronExpression!: string;
  @ApiProperty({ example: 'At 07:00:00, Monday through Friday' }) explanation!: string;
  @ApiProperty({ type: [String], example: ['2026-11-23T07:00:00.000Z'] }) nextRuns!: string[];
}

export class TapDto {
  @ApiProperty({ example: 'github_issues' }) name!: string;
  @ApiProperty({ example: 'Open issues' }) description!: string;
  @ApiProperty({
    nullable: true,
    type: String,
    example: 'tap-scripts/github_issues_20261122T101530123-3f9a1c.py',
  })
  scriptPath!: string | null;
  @ApiProperty({ example: 'issues' }) targetPipeline!: string;
  @ApiProperty({ type: [String] }) packages!: string[];
  @ApiProperty({ nullable: true, type: String }) secretName!: string | null;
  @ApiProperty({ nullable: true, type: String, example: '0 0/15 * * * ?' }) cronExpression!: string | null;
  @ApiProperty({ example: 'Europe/Berlin', description: 'IANA time zone of the schedule' }) timezone!: string;
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ enum: ['structured', 'document'] }) tapType!: string;
  @ApiProperty({ nullable: true, type: String }) catalog!: string | null;
}

export class TapWithScriptDto extends TapDto {
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'The script body; null when never generated or missing',
  })
  script!: string | null;
  @ApiPropertyOptional({
    description: 'Present (true) only when scriptPath is set but the object is absent from the object store',
  })
  scriptMissing?: boolean;
  @ApiProperty({
    type: [String],
    example: ['2026-03-30T07:30:00+02:00'],
    description:
      "The next five fire times of an enabled schedule, ISO 8601 with the offset of the tap's `timezone`; " +
      'empty when the tap has no enabled schedule',
  })
  nextFireTimes!: string[];
}

export class DeleteTapResultDto {
  @ApiProperty({ example: 'ok' }) status!: string;
  @ApiProperty({ example: 'github_issues' }) tap!: string;
  @ApiProperty({ example: 0, description: 'Ledger entries removed (document taps)' })
  ledgerEntriesDeleted!: number;
}

const IsolationProperty = (): PropertyDecorator =>
  ApiProperty({
    enum: ['bwrap', 'none'],
    nullable: true,
    type: String,
    description:
      'The isolation the script ran under: `bwrap` (own namespaces, read-only system, a private network whose ' +
      "only way out is the platform's egress proxy) or `none` (the operator set TAP_SANDBOX=off: limits only, host " +
      'network); null when the script never started (e.g. a package failed to install).',
  });

export class TestResultDto {
  @ApiProperty({ type: 'array', items: { type: 'object' }, description: 'At most 20 records' })
  records!: unknown[];
  @ApiProperty() recordCount!: number;
  @ApiProperty() recordsTruncated!: boolean;
  @ApiProperty({ example: 'csv', description: '`csv`, `json` (JSON/XML pipelines) or `document`' })
  dataType!: string;
  @ApiProperty({ type: [String], nullable: true }) columns!: string[] | null;
  @ApiProperty() logs!: string;
  @ApiProperty({ nullable: true, type: String }) error!: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    description:
      "On an error or 0 records: the model's diagnosis from the error, logs and script; null without a model provider",
  })
  aiExplanation!: string | null;
  @ApiProperty() durationMs!: number;
  @IsolationProperty()
  isolation!: string | null;
}

export class RunResultDto {
  @ApiProperty() tap!: string;
  @ApiProperty() description!: string;
  @ApiProperty({
    enum: ['success', 'skipped'],
    description: '`skipped` when debounced; a run that failed is `success` with its reason in `error` (spec)',
  })
  status!: string;
  @ApiProperty({ enum: ['run', 'test'] }) mode!: string;
  @ApiProperty() targetPipeline!: string;
  @ApiProperty() persisted!: boolean;
  @ApiPropertyOptional({ enum: ['test_mode', 'run_error', 'no_records', 'no_target_pipeline', 'debounced'] })
  persistedReason?: string;
  @ApiPropertyOptional({
    description: 'Groups every ingestion job of the run (follow with /pipeline/status)',
  })
  publisherToken?: string;
  @ApiProperty({ type: [String] }) pipelineTokens!: string[];
  @ApiProperty({
    description:
      'Records submitted to the target pipeline: 0 when the run failed or has no target (the logs say how many the ' +
      'script yielded); mode `test`: the records the script yielded',
  })
  recordCount!: number;
  @ApiProperty() dataType!: string;
  @ApiProperty({ type: [String], nullable: true }) columns!: string[] | null;
  @ApiProperty() logs!: string;
  @IsolationProperty()
  isolation!: string | null;
  @ApiProperty({ nullable: true, type: String }) error!: string | null;
  @ApiPropertyOptional({
    nullable: true,
    type: String,
    description: "On an error or 0 records: the model's diagnosis (null without a model provider)",
  })
  aiExplanation?: string | null;
  @ApiPropertyOptional({ type: 'array', items: { type: 'object' }, description: 'Test mode only' })
  records?: unknown[];
  @ApiPropertyOptional() recordsTruncated?: boolean;
  @ApiPropertyOptional({ description: 'Run history id' }) runId?: string;
  @ApiPropertyOptional() durationMs?: number;
}

export class RunLogEntryDto {
  @ApiProperty() runId!: string;
  @ApiProperty() tap!: string;
  @ApiProperty({ enum: ['run', 'test'] }) mode!: string;
  @ApiProperty({ enum: ['manual', 'schedule'] }) trigger!: string;
  @ApiProperty({ enum: ['running', 'success', 'error', 'skipped'] }) status!: string;
  @ApiProperty() startedAt!: string;
  @ApiProperty({ nullable: true, type: String }) finishedAt!: string | null;
  @ApiProperty({ nullable: true, type: Number }) durationMs!: number | null;
  @ApiProperty() recordCount!: number;
  @ApiProperty() persisted!: boolean;
  @ApiProperty({ nullable: true, type: String }) persistedReason!: string | null;
  @ApiProperty({ nullable: true, type: String }) publisherToken!: string | null;
  @ApiProperty({ nullable: true, type: String }) error!: string | null;
}

export class LedgerEntryDto {
  @ApiProperty() uri!: string;
  @ApiProperty() filename!: string;
  @ApiProperty({ description: 'SHA-256 of the content' }) contentHash!: string;
  @ApiProperty({ example: 'dev-staged/taps/wiki/6f1c…/page.html' }) stagedPath!: string;
  @ApiProperty() pipelineToken!: string;
  @ApiProperty() processedAt!: string;
}

export class LedgerClearResultDto {
  @ApiProperty({ example: 'ok' }) status!: string;
  @ApiProperty({ example: 12 }) deleted!: number;
}

export class MigrateStorageDto {
  @ApiProperty({ example: 'github_issues' })
  @IsString()
  @Matches(TAP_NAME_PATTERN, { message: NAME_MESSAGE })
  tapName!: string;

  @ApiPropertyOptional({
    enum: ['minio', 'github'],
    description: 'Where to move the script; without it, to the other backend',
  })
  @IsOptional()
  @IsIn(['minio', 'github'], { message: 'target must be minio or github' })
  target?: 'minio' | 'github';
}

export class MigrateStorageResultDto {
  @ApiProperty() tapName!: string;
  @ApiProperty({ enum: ['minio', 'github'] }) storage!: string;
  @ApiProperty({ nullable: true, type: String, description: 'The last built-in version (never deleted)' })
  scriptPath!: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'taps/github_issues.py' }) repoPath!: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'The commit runs execute' }) commitSha!:
    string | null;
  @ApiProperty({ description: 'False when the script was already on the target (nothing changed)' })
  migrated!: boolean;
}

export class TapStateDto {
  @ApiProperty({ example: 'github_issues' }) name!: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    example: { updated_since: '2026-11-20T08:00:00Z' },
    description:
      "The last committed state (what the next run's fetch(state) gets); null: never set, or reset",
  })
  state!: Record<string, unknown> | null;
  @ApiProperty({ nullable: true, type: String, example: '2026-11-27T08:00:05.120Z' }) committedAt!:
    string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    description:
      'The job whose load committed the state; null when set through PUT or by a run that loaded nothing',
  })
  pipelineToken!: string | null;
  @ApiProperty({
    example: 3,
    description: 'Version of the state (0: none yet); GET /tap/state/history lists them',
  })
  version!: number;
}

export class SetTapStateDto {
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    example: { updated_since: '2026-01-01T00:00:00Z' },
    description:
      'The new state (a JSON object, at most 64 KiB), or null to reset it: the next run starts from nothing',
  })
  @ValidateIf((o: SetTapStateDto) => o.state !== null)
  @IsObject({ message: 'state must be a JSON object, or null to reset it' })
  state!: Record<string, unknown> | null;
}

export class TapStateVersionDto {
  @ApiProperty({ example: 3 }) version!: number;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true })
  state!: Record<string, unknown> | null;
  @ApiProperty({
    enum: ['pending', 'committed', 'discarded'],
    description: '`pending`: waiting for the load its run fed; `discarded`: that load failed (see `reason`)',
  })
  status!: string;
  @ApiProperty({ enum: ['run', 'put'] }) source!: string;
  @ApiProperty({ nullable: true, type: String }) runId!: string | null;
  @ApiProperty({ type: [String] }) pipelineTokens!: string[];
  @ApiProperty() createdAt!: string;
  @ApiProperty({ nullable: true, type: String }) committedAt!: string | null;
  @ApiProperty({ nullable: true, type: String }) reason!: string | null;
}
