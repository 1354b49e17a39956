import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
} from 'class-validator';
import { TAP_TYPES, TapType } from '../tap.types';

/** No path characters: the name becomes part of object keys and ledger keys. */
export const TAP_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const TAP_NAME_MESSAGE =
  'name must be 1-128 letters, digits, _ and -, starting with a letter or digit (no path characters)';
/** Scripts are small programs; anything larger is almost certainly data pasted by mistake. */
export const MAX_SCRIPT_BYTES = 512 * 1024;

export class TapConfigDto {
  @ApiProperty({ example: 'github_issues' })
  @IsString()
  @Matches(TAP_NAME_PATTERN, { message: TAP_NAME_MESSAGE })
  name!: string;

  @ApiPropertyOptional({ example: 'Open issues of our repositories', default: '' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(4000)
  description?: string;

  @ApiPropertyOptional({
    example: 'tap-scripts/github_issues_20261122T101530-3f9a.py',
    type: String,
    nullable: true,
    description: 'An existing script version of this tap (e.g. to roll back); `script` writes a new one',
  })
  @IsOptional()
  @IsString()
  @MaxLength(400)
  scriptPath?: string | null;

  @ApiPropertyOptional({
    description:
      'Python 3 source with a fetch() function; stored as a new version and `scriptPath` points to it',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(MAX_SCRIPT_BYTES)
  script?: string;

  @ApiPropertyOptional({
    example: 'issues',
    default: '',
    type: String,
    nullable: true,
    description: 'Pipeline fed by run mode',
  })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  targetPipeline?: string | null;

  @ApiPropertyOptional({ example: ['requests==2.32.3'], default: [] })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  @MaxLength(200, { each: true })
  packages?: string[];

  @ApiPropertyOptional({
    example: 'github',
    type: String,
    nullable: true,
    description: 'Its fields become environment variables',
  })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  secretName?: string | null;

  @ApiPropertyOptional({
    example: '0 0 7 ? * MON-FRI',
    type: String,
    nullable: true,
    description: 'Quartz cron, seconds first',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  cronExpression?: string | null;

  @ApiPropertyOptional({
    example: 'Europe/Berlin',
    default: 'UTC',
    description:
      "IANA time zone the schedule's times are read in. Daylight saving as Quartz: a time the clock shows twice " +
      'fires once (its first occurrence); times the clock skips fire at the first valid time after the gap.',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(64)
  timezone?: string;

  @ApiPropertyOptional({ default: false, description: 'Whether the schedule fires' })
  @OptionalNotNull()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ enum: TAP_TYPES, default: 'structured' })
  @OptionalNotNull()
  @IsIn(TAP_TYPES as unknown as string[])
  tapType?: TapType;

  @ApiPropertyOptional({ example: 'engineering', type: String, nullable: true })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  catalog?: string | null;

  // Where the script lives is changed only by POST /tap/migrate-storage; GET /tap shows it, and a
  // configuration read and posted back as it is must be accepted, so these are taken and ignored.
  @ApiPropertyOptional({
    enum: ['minio', 'github'],
    readOnly: true,
    description: 'Read-only (POST /tap/migrate-storage moves the script); ignored on save',
  })
  @IsOptional()
  @IsIn(['minio', 'github'])
  storage?: 'minio' | 'github';

  @ApiPropertyOptional({
    nullable: true,
    type: String,
    readOnly: true,
    description: 'Read-only; ignored on save',
  })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  repoPath?: string | null;

  @ApiPropertyOptional({
    nullable: true,
    type: String,
    readOnly: true,
    description: 'Read-only; ignored on save',
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  commitSha?: string | null;

  @ApiPropertyOptional({
    type: [String],
    readOnly: true,
    description: 'Read-only (GET /tap computes it from the schedule); ignored on save',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(10)
  @IsString({ each: true })
  @MaxLength(40, { each: true })
  nextFireTimes?: string[];
}

/** POST /tap/test: a configuration that need not be saved (an inline `script` wins over `scriptPath`). */
export class TestTapDto extends PartialType(TapConfigDto) {}
