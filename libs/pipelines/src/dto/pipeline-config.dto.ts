import { OptionalNotNull } from '@tapyard/core';
import { UnstructuredAttributesDto } from './unstructured-attributes.dto';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import {
  DECIMAL_MAX_PRECISION,
  FIELD_TYPES,
  FieldType,
  SCHEMA_CONTRACTS,
  SchemaContract,
} from '@tapyard/model';
import { DestinationDto } from '../destination-sections';

export const PIPELINE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
export const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

export class SchemaFieldDto {
  @ApiProperty({ example: 'order_id' })
  @IsString()
  @Matches(IDENTIFIER, {
    message: 'name must be a column name: letters, digits and _, not starting with a digit',
  })
  name!: string;

  @ApiProperty({
    enum: FIELD_TYPES,
    example: 'bigint',
    description:
      "The spec's eight types, and `decimal`: exact (PostgreSQL numeric(p,s), MongoDB Decimal128, Parquet DECIMAL, " +
      'a JSON string in sinks). `float` is single precision; use `double` or `decimal` for money.',
  })
  @IsIn(FIELD_TYPES as unknown as string[])
  type!: FieldType;

  @ApiPropertyOptional({
    minimum: 1,
    maximum: DECIMAL_MAX_PRECISION,
    example: 12,
    description:
      '`decimal` only: total significant digits. Absent (with scale): no limit, PostgreSQL `numeric`.',
  })
  @OptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(DECIMAL_MAX_PRECISION)
  precision?: number;

  @ApiPropertyOptional({
    minimum: 0,
    maximum: DECIMAL_MAX_PRECISION,
    example: 2,
    description:
      '`decimal` only, with `precision`: digits after the point, at most the precision (default 0, as `numeric(p)`). ' +
      'A value with more digits after the point, or more before it than precision - scale, is rejected, never rounded.',
  })
  @OptionalNotNull()
  @IsInt()
  @Min(0)
  @Max(DECIMAL_MAX_PRECISION)
  scale?: number;
}

export class SchemaPropertiesDto {
  @ApiProperty({ type: [SchemaFieldDto] })
  @IsArray()
  @ArrayMaxSize(10000)
  @ValidateNested({ each: true })
  @Type(() => SchemaFieldDto)
  fields!: SchemaFieldDto[];
}

export class CsvAttributesDto {
  @ApiPropertyOptional({ example: ',', default: ',', description: 'One character; use "\\t" for TSV.' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 1)
  delimiter?: string;

  @ApiPropertyOptional({ example: true, default: true })
  @OptionalNotNull()
  @IsBoolean()
  header?: boolean;

  @ApiPropertyOptional({ example: '"', default: '"', nullable: true, description: 'null disables quoting' })
  @IsOptional()
  @IsString()
  @Length(1, 1)
  quote?: string | null;

  @ApiPropertyOptional({
    example: '"',
    default: '"',
    nullable: true,
    description: 'default: the quote (doubled quotes)',
  })
  @IsOptional()
  @IsString()
  @Length(1, 1)
  escape?: string | null;

  @ApiPropertyOptional({ enum: ['utf-8', 'latin1'], default: 'utf-8' })
  @OptionalNotNull()
  @IsIn(['utf-8', 'latin1'])
  encoding?: 'utf-8' | 'latin1';

  @ApiPropertyOptional({
    type: [String],
    example: ['', 'NA'],
    description:
      'Unquoted field texts read as NULL, in every column; a quoted field is never NULL (`""` is an empty ' +
      'string), as in PostgreSQL CSV import. Absent: an unquoted empty field is NULL, and non-string ' +
      'columns also read NULL, null, \\N, NA and N/A as NULL.',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @MaxLength(100, { each: true })
  nullValues?: string[];
}

export class JsonAttributesDto {
  @ApiPropertyOptional({
    example: 'data.items',
    nullable: true,
    description: 'Dot path to the records array',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  recordPath?: string | null;
}

export class XmlAttributesDto {
  @ApiProperty({ example: 'row', description: 'Element holding one record' })
  @IsString()
  @Matches(/^[A-Za-z_][\w.-]{0,99}$/, { message: 'rowElement must be an XML element name' })
  rowElement!: string;
}

export class FileAttributesDto {
  @ApiPropertyOptional({
    enum: ['csv', 'json', 'xml', 'unstructured'],
    description: 'Defaults to csv, or json/xml when the schema is the single `_json` / `_xml` field.',
  })
  @OptionalNotNull()
  @IsIn(['csv', 'json', 'xml', 'unstructured'])
  format?: 'csv' | 'json' | 'xml' | 'unstructured';

  @ApiPropertyOptional({ type: CsvAttributesDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => CsvAttributesDto)
  csvAttributes?: CsvAttributesDto;

  @ApiPropertyOptional({ type: JsonAttributesDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => JsonAttributesDto)
  jsonAttributes?: JsonAttributesDto;

  @ApiPropertyOptional({ type: XmlAttributesDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => XmlAttributesDto)
  xmlAttributes?: XmlAttributesDto;

  @ApiPropertyOptional({
    type: UnstructuredAttributesDto,
    nullable: true,
    description:
      'Non-null makes a document pipeline (required for document taps and document uploads): how documents are parsed, chunked and labelled. `{}` takes the defaults.',
  })
  @IsOptional()
  @ValidateNested()
  @Type(() => UnstructuredAttributesDto)
  unstructuredAttributes?: UnstructuredAttributesDto | null;
}

export class SourceDto {
  @ApiPropertyOptional({ type: FileAttributesDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => FileAttributesDto)
  fileAttributes?: FileAttributesDto;

  @ApiProperty({ type: SchemaPropertiesDto })
  @IsObject()
  @ValidateNested()
  @Type(() => SchemaPropertiesDto)
  schemaProperties!: SchemaPropertiesDto;
}

export class DataQualityRuleDto {
  @ApiProperty({ enum: ['not_null', 'unique', 'range', 'regex', 'allowed_values', 'type_conformance'] })
  @IsIn(['not_null', 'unique', 'range', 'regex', 'allowed_values', 'type_conformance'])
  type!: 'not_null' | 'unique' | 'range' | 'regex' | 'allowed_values' | 'type_conformance';

  @ApiProperty({ example: 'amount' })
  @IsString()
  @IsNotEmpty()
  column!: string;

  @ApiPropertyOptional({ example: 0, description: 'range: lower bound (number, or ISO date/timestamp)' })
  @OptionalNotNull()
  min?: number | string;

  @ApiPropertyOptional({ example: 10000, description: 'range: upper bound' })
  @OptionalNotNull()
  max?: number | string;

  @ApiPropertyOptional({
    example: '^[A-Z]{2}\\d{4}$',
    description: 'regex: JavaScript pattern the value must match',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(1000)
  pattern?: string;

  @ApiPropertyOptional({ example: ['EU', 'US'], type: [String] })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(10000)
  @IsString({ each: true })
  values?: string[];
}

/** The AI instruction a stage may carry; a later release writes the stage's script from it. */
class AiInstructionDto {
  @ApiPropertyOptional({
    nullable: true,
    description: 'AI instruction (a later release writes a script from it)',
  })
  @IsOptional()
  @IsString()
  @MaxLength(10000)
  aiInstruction?: string | null;
}

export class DataQualityDto extends AiInstructionDto {
  @ApiPropertyOptional({ type: [DataQualityRuleDto] })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => DataQualityRuleDto)
  rules?: DataQualityRuleDto[];

  @ApiPropertyOptional({
    example: 'orders.json',
    description:
      'JSON/XML pipelines: a JSON Schema in the validation-schema location (POST /config/upload or ' +
      '/config/generate-schema); records that fail it are rejected with the validation message',
  })
  @OptionalNotNull()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, { message: 'validationSchema must be a file name' })
  validationSchema?: string;
}

export class TransformationStepDto {
  @ApiProperty({ enum: ['rename', 'cast', 'drop', 'derive'] })
  @IsIn(['rename', 'cast', 'drop', 'derive'])
  op!: 'rename' | 'cast' | 'drop' | 'derive';

  @ApiPropertyOptional({ example: 'amt', description: 'rename: current name' })
  @OptionalNotNull()
  @IsString()
  from?: string;

  @ApiPropertyOptional({ example: 'amount', description: 'rename: new name' })
  @OptionalNotNull()
  @Matches(IDENTIFIER, { message: 'to must be a column name' })
  to?: string;

  @ApiPropertyOptional({ example: 'amount', description: 'cast, drop, derive: the column' })
  @OptionalNotNull()
  @Matches(IDENTIFIER, { message: 'column must be a column name' })
  column?: string;

  @ApiPropertyOptional({ enum: FIELD_TYPES, description: 'cast, derive: the resulting type' })
  @OptionalNotNull()
  @IsIn(FIELD_TYPES as unknown as string[])
  type?: FieldType;

  @ApiPropertyOptional({ example: "upper(country) || '-' || city", description: 'derive: expression' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(2000)
  expression?: string;
}

export class TransformationDto extends AiInstructionDto {
  @ApiPropertyOptional({ type: [TransformationStepDto] })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => TransformationStepDto)
  mappings?: TransformationStepDto[];
}

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
