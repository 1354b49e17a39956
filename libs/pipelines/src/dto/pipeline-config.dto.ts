import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { FIELD_TYPES, FieldType, SCHEMA_CONTRACTS, SchemaContract } from '@tapyard/model';
import { DestinationDto } from '../destination-sections';
import { PIPELINE_NAME_PATTERN } from './names';
import { SourceDto } from './source.dto';
import { DataQualityDto, TransformationDto } from './stages.dto';

export * from './names';
export * from './source.dto';
export * from './stages.dto';

/** One column's type explained by `POST /pipeline/generate` (see profiling's inferColumnType). */
export class TypeNoteDto {
  @ApiProperty({ example: 'price' })
  column!: string;

  @ApiProperty({ enum: FIELD_TYPES, example: 'decimal' })
  type!: FieldType;

  @ApiProperty({
    example:
      "Values are written with 2 places after the point (e.g. '12.50'): decimal keeps them exact, where a floating type would round sums.",
  })
  reason!: string;

  @ApiProperty({
    example: 0,
    description:
      'Sampled values that do not read as the proposed type (their rows would be rejected at load)',
  })
  outliers!: number;

  @ApiProperty({ type: [String], description: 'Up to three of the outliers, as written' })
  examples!: string[];
}

export class PipelineConfigDto {
  @ApiProperty({ example: 'sales' })
  @Matches(PIPELINE_NAME_PATTERN, {
    message: 'name must be 1-128 characters of letters, digits, _, . and -, starting with a letter or digit',
  })
  name!: string;

  @ApiPropertyOptional({ example: 'finance', nullable: true })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  catalog?: string | null;

  @ApiPropertyOptional({ example: 'Daily sales export' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiPropertyOptional({
    enum: SCHEMA_CONTRACTS,
    default: 'evolve',
    description:
      "What a job does when the file's columns differ from the schema. `evolve`: new columns join the schema as " +
      'string (the job ends `warning` naming them); `freeze`: the job is refused, naming the added and missing ' +
      'columns; `discard_columns`: unknown columns are dropped (`warning` naming them); `discard_rows`: rows with ' +
      'a value in an unknown column are rejected. In every mode a header whose columns are mostly unknown is refused.',
  })
  @OptionalNotNull()
  @IsIn(SCHEMA_CONTRACTS as unknown as string[])
  schemaContract?: SchemaContract;

  @ApiProperty({ type: SourceDto })
  @IsObject()
  @ValidateNested()
  @Type(() => SourceDto)
  source!: SourceDto;

  @ApiPropertyOptional({ type: DataQualityDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => DataQualityDto)
  dataQuality?: DataQualityDto;

  @ApiPropertyOptional({ type: TransformationDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => TransformationDto)
  transformation?: TransformationDto;

  @ApiProperty({
    type: DestinationDto,
    description:
      'Where the rows go: one or more sections, each read by a destination plug-in; one job loads into every one.',
  })
  // Its sections are validated by the registered plug-ins' DTOs (DestinationSections.validate).
  @IsObject()
  destination!: DestinationDto;

  @ApiPropertyOptional({
    type: [TypeNoteDto],
    description:
      'Output of `POST /pipeline/generate`: why columns got their types. Accepted so that a proposal registers ' +
      'as is, and not stored.',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(10000)
  typeNotes?: TypeNoteDto[];
}
