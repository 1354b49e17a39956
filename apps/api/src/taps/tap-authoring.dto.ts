import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { MAX_SCRIPT_BYTES, TAP_NAME_PATTERN, TAP_TYPES, TapType } from '@tapyard/taps';

const TAP_NAME = 'tapName must be a tap name (letters, digits, _ and -)';
const MAX_LOGS = 2_000_000;

export class ChatMessageDto {
  @ApiProperty({ enum: ['user', 'assistant'] })
  @IsIn(['user', 'assistant'], { message: 'role must be user or assistant' })
  role!: 'user' | 'assistant';

  @ApiProperty({ example: 'I need open GitHub issues of our repos' })
  @IsString()
  @MaxLength(50_000)
  content!: string;
}

export class BrainstormDto {
  @ApiProperty({ type: [ChatMessageDto] })
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => ChatMessageDto)
  messages!: ChatMessageDto[];

  @ApiPropertyOptional()
  @OptionalNotNull()
  @IsString()
  @MaxLength(50_000)
  currentDescription?: string;

  @ApiPropertyOptional({ enum: TAP_TYPES, default: 'structured' })
  @OptionalNotNull()
  @IsIn(TAP_TYPES as unknown as string[], { message: 'tapType must be structured or document' })
  tapType?: TapType;
}

export class BrainstormResultDto {
  @ApiProperty() reply!: string;
  @ApiProperty() description!: string;
  @ApiProperty({
    type: [String],
    description:
      'Never the variables the platform injects (SERVICE_POSTGRES_DATABASE, SERVICE_MONGODB_DATABASE, SERVICE_PLATFORM_HOST, SERVICE_PLATFORM_PORT)',
  })
  suggestedEnvVars!: string[];
}

class TapNamed {
  @ApiProperty({ example: 'github_issues' })
  @IsString()
  @Matches(TAP_NAME_PATTERN, { message: TAP_NAME })
  tapName!: string;

  @ApiPropertyOptional({ description: 'The version the new one replaces (kept for rollback)' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(400)
  oldScriptPath?: string;
}

export class GenerateDto extends TapNamed {
  @ApiProperty({ example: 'Open issues of the repos in GITHUB_REPOS, with labels and assignees' })
  @IsString()
  @MaxLength(50_000)
  description!: string;

  @ApiPropertyOptional({
    description: "The tap's secret: the model is told its field names, never its values",
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(200)
  secretName?: string;

  @ApiPropertyOptional({ enum: TAP_TYPES, default: 'structured' })
  @OptionalNotNull()
  @IsIn(TAP_TYPES as unknown as string[], { message: 'tapType must be structured or document' })
  tapType?: TapType;
}

export class FixDto extends TapNamed {
  @ApiProperty()
  @IsString()
  @MaxLength(MAX_SCRIPT_BYTES)
  script!: string;

  @ApiPropertyOptional() @OptionalNotNull() @IsString() @MaxLength(50_000) diagnosis?: string;
  @ApiPropertyOptional() @OptionalNotNull() @IsString() @MaxLength(MAX_LOGS) logs?: string;
  @ApiPropertyOptional() @OptionalNotNull() @IsString() @MaxLength(100_000) error?: string;
}

export class ReviewDto extends TapNamed {
  @ApiProperty()
  @IsString()
  @MaxLength(MAX_SCRIPT_BYTES)
  script!: string;

  @ApiProperty({ example: 120 })
  @Type(() => Number)
  @IsInt({ message: 'recordCount must be an integer' })
  @Min(0)
  recordCount!: number;

  @ApiProperty({ example: 2300 })
  @Type(() => Number)
  @IsInt({ message: 'durationMs must be an integer' })
  @Min(0)
  durationMs!: number;

  @ApiPropertyOptional() @OptionalNotNull() @IsString() @MaxLength(MAX_LOGS) logs?: string;
}

export class OptimizeDto extends ReviewDto {
  @ApiPropertyOptional({
    default: false,
    description:
      'Regression guard on the server: test the original and the rewrite, keep the rewrite only when it is not 20 % ' +
      'slower (and works and returns as many records); both durations are in `verification`. Needs tap:run.',
  })
  @OptionalNotNull()
  @IsBoolean()
  verify?: boolean;

  @ApiPropertyOptional({
    description: 'SERVICE_TAP_TEST_LIMIT for the verification runs; 0 or less: no cap, as for /tap/test',
  })
  @OptionalNotNull()
  @Type(() => Number)
  @IsInt()
  @Max(1_000_000_000)
  testLimit?: number;
}

export class ScriptResultDto {
  @ApiProperty() script!: string;
  @ApiProperty({ type: [String], example: ['requests==2.32.3'] }) packages!: string[];
  @ApiProperty({ example: 'tap-scripts/github_issues_20261125T101500000-a1b2c3.py' }) scriptPath!: string;
  @ApiProperty({ type: [String], description: 'Keys of the prompt fragments that matched and were injected' })
  injectedPrompts!: string[];
}

export class VerificationDto {
  @ApiProperty() originalMs!: number;
  @ApiProperty() optimizedMs!: number;
  @ApiProperty({ enum: ['original', 'optimized'] }) kept!: string;
  @ApiProperty() reason!: string;
}

export class ChangesResultDto {
  @ApiProperty() script!: string;
  @ApiProperty({ type: [String] }) packages!: string[];
  @ApiProperty() scriptPath!: string;
  @ApiProperty({ type: [String] }) changes!: string[];
}

export class ReviewResultDto extends ChangesResultDto {
  @ApiProperty() rewritten!: boolean;
}

export class OptimizeResultDto extends ChangesResultDto {
  @ApiPropertyOptional({ type: VerificationDto }) verification?: VerificationDto;
}

export class PromptFragmentDto {
  @ApiProperty({ example: 'salesforce' }) key!: string;
  @ApiProperty({ type: [String], example: ['sfdc', 'sales cloud'] }) aliases!: string[];
  @ApiProperty() content!: string;
  @ApiProperty() createdAt!: string;
  @ApiProperty() updatedAt!: string;
}

class FragmentAliasesDto {
  @ApiPropertyOptional({ type: [String], default: [] })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @MaxLength(100, { each: true })
  aliases?: string[];
}

export class PutPromptFragmentDto extends FragmentAliasesDto {
  @ApiProperty({ example: 'Use the REST API v59.0; page with nextRecordsUrl; OAuth client credentials.' })
  @IsString()
  @MaxLength(20_000)
  content!: string;
}

export class SuggestPromptFragmentDto extends FragmentAliasesDto {
  @ApiProperty({ example: 'salesforce' })
  @IsString()
  @MaxLength(100)
  key!: string;

  @ApiPropertyOptional({ description: 'Existing content to refine (not replace)' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(20_000)
  content?: string;
}

export class OkDto {
  @ApiProperty({ example: 'ok' }) status!: string;
}
