import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean } from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';
import { toBool } from '../http/query-transforms';

export class RegenerateQueryDto {
  @ApiPropertyOptional({
    default: false,
    description:
      'Commit even when the repository file was edited since the recorded commit (clears a conflict)',
  })
  @OptionalNotNull()
  @Transform(toBool)
  @IsBoolean({ message: 'overwrite must be true or false' })
  overwrite?: boolean;
}

export class CodegenEntryDto {
  @ApiProperty({ enum: ['dataQuality', 'transformation'] }) kind!: string;
  @ApiProperty({ description: 'The AI instruction of the pipeline' }) instruction!: string;
  @ApiProperty({ nullable: true, type: String }) script!: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) generatedAt!: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'Model that wrote the script' }) model!:
    string | null;
  @ApiProperty({ description: "False when the `ai` secret's codegen model changed since" })
  modelIsCurrent!: boolean;
  @ApiProperty({ enum: ['ready', 'pending'] }) status!: string;
  @ApiProperty({ nullable: true, type: String }) pendingReason!: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    enum: ['save', 'run', 'regenerate', 'repository', 'restore', 'restore-version'],
  })
  origin!: string | null;
  @ApiPropertyOptional({
    description: 'Number of the live script; absent for a script stored before versioning',
  })
  version?: number;
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'sha-256 of the instruction and the source schema',
  })
  fingerprint!: string | null;
  @ApiProperty({ nullable: true, type: String, enum: ['minio', 'github'] }) storage!: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'pipelines/sales/data-quality.py' }) repoPath!:
    string | null;
  @ApiProperty({ nullable: true, type: String, description: 'The commit every run executes' })
  commitSha!: string | null;
  @ApiProperty({ description: "True when the branch head's file differs from the recorded commit" })
  drift!: boolean;
  @ApiPropertyOptional({ description: 'Present when drift: the head a pull would record' }) headSha?: string;
  @ApiPropertyOptional({
    description: 'A new script was not committed: the file was edited since the recorded commit',
  })
  conflict?: boolean;
  @ApiPropertyOptional() conflictReason?: string;
  @ApiPropertyOptional({
    description: 'Restore only: the version equals the live script; nothing was written',
  })
  noop?: boolean;
}

export class CodegenEntriesDto {
  @ApiProperty({ type: CodegenEntryDto, nullable: true }) dataQuality!: CodegenEntryDto | null;
  @ApiProperty({ type: CodegenEntryDto, nullable: true }) transformation!: CodegenEntryDto | null;
}

export class CodegenVersionDto {
  @ApiProperty() version!: number;
  @ApiProperty({ nullable: true, type: String }) origin!: string | null;
  @ApiProperty({ nullable: true, type: String }) model!: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) generatedAt!: string | null;
  @ApiProperty({ nullable: true, type: String }) fingerprint!: string | null;
  @ApiProperty({ nullable: true, type: String }) commitSha!: string | null;
}

export class CodegenVersionScriptDto extends CodegenVersionDto {
  @ApiProperty({ description: "The version's text as it was stored" }) script!: string;
}
