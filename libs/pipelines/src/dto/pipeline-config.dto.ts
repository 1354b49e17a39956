import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { FIELD_TYPES, FieldType, VECTOR_STORES, VectorStoreName } from '../pipeline.types';

export const PIPELINE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

export class SchemaFieldDto {
  @ApiProperty({ example: 'order_id' })
  @IsString()
  @Matches(IDENTIFIER, {
    message: 'name must be a column name: letters, digits and _, not starting with a digit',
  })
  name!: string;

  @ApiProperty({ enum: FIELD_TYPES, example: 'bigint' })
  @IsIn(FIELD_TYPES as unknown as string[])
  type!: FieldType;
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
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: 'Non-null for document pipelines (required for document taps).',
  })
  @IsOptional()
  @IsObject()
  unstructuredAttributes?: Record<string, unknown> | null;
}

export class SourceDto {
  @ApiPropertyOptional({ type: FileAttributesDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => FileAttributesDto)
  fileAttributes?: FileAttributesDto;

  @ApiProperty({ type: SchemaPropertiesDto })
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

export class DatabaseDestinationDto {
  @ApiPropertyOptional({
    example: 'tapyard',
    description:
      'PostgreSQL or MongoDB database. Default: the platform database (PostgreSQL and MongoDB alike); for a ' +
      "tenant (multi-tenant mode) the tenant's own: the platform database for PostgreSQL, the database named " +
      'like the tenant for MongoDB, the only ones it may name. MongoDB admin, config, local and tapyard_internal ' +
      'are refused.',
  })
  @OptionalNotNull()
  @Matches(/^[A-Za-z_][A-Za-z0-9_-]{0,62}$/, { message: 'dbName must be a database name' })
  dbName?: string;

  @ApiPropertyOptional({
    example: 'public',
    description:
      "PostgreSQL schema (ignored for MongoDB). Default: public; for a tenant its own schema t_<tenant>, the only one it may name. The platform's schemas tapyard and tapyard_meta and the server's (pg_*, information_schema) are refused with 400.",
  })
  @OptionalNotNull()
  // '-' is allowed because tenant schemas carry the tenant name (t_acme-eu); names are always quoted.
  @Matches(SCHEMA_NAME, { message: 'schema must be a schema name: letters, digits, _ and -' })
  schema?: string;

  @ApiProperty({
    example: 'sales',
    description:
      'Table or collection (at most 63 bytes). Rejected rows go to a companion <table>_rejects (shortened with a ' +
      'hash when that would pass 63 bytes), so names ending in _rejects are refused.',
  })
  @Matches(IDENTIFIER, { message: 'table must be a table name: letters, digits and _' })
  table!: string;

  @ApiPropertyOptional({ example: true, default: true, description: 'false selects the document database' })
  @OptionalNotNull()
  @IsBoolean()
  usePostgres?: boolean;
}

export class ObjectStoreDestinationDto {
  @ApiPropertyOptional({
    example: 'analytics',
    description:
      "Bucket. Default: the environment's <env>-output, the only bucket a tenant may name. Names ending in -raw, " +
      "-config, -taps, -staged or -output (environments' own buckets) other than that one are refused with 400.",
  })
  @OptionalNotNull()
  @Matches(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { message: 'bucket must be an S3 bucket name' })
  bucket?: string;

  @ApiProperty({
    example: 'sales/daily',
    description: 'Key prefix; files land under <prefix>/job=<pipelineToken>/',
  })
  @Matches(/^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._=/-]{0,199}$/, {
    message: 'prefix must be a key prefix without ..',
  })
  prefix!: string;

  @ApiPropertyOptional({ enum: ['parquet', 'csv', 'jsonl'], default: 'parquet' })
  @OptionalNotNull()
  @IsIn(['parquet', 'csv', 'jsonl'])
  format?: 'parquet' | 'csv' | 'jsonl';
}

export class VectorStoreDestinationDto {
  @ApiProperty({ enum: VECTOR_STORES, example: 'qdrant' })
  @IsIn(VECTOR_STORES as unknown as string[])
  store!: VectorStoreName;

  @ApiProperty({ example: 'handbook', description: 'Collection (class, table) that receives the chunks' })
  @Matches(/^[A-Za-z][A-Za-z0-9_-]{0,127}$/, {
    message: 'collection must be 1-128 letters, digits, _ and -, starting with a letter',
  })
  collection!: string;
}

export class DestinationDto {
  @ApiPropertyOptional({ type: DatabaseDestinationDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => DatabaseDestinationDto)
  database?: DatabaseDestinationDto;

  @ApiPropertyOptional({ type: ObjectStoreDestinationDto, description: 'Instead of database: write files' })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => ObjectStoreDestinationDto)
  objectStore?: ObjectStoreDestinationDto;

  @ApiPropertyOptional({
    type: VectorStoreDestinationDto,
    description: 'Instead of database or objectStore: documents into a vector store (document taps)',
  })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => VectorStoreDestinationDto)
  vectorStore?: VectorStoreDestinationDto;
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

  @ApiProperty({ type: SourceDto })
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

  @ApiProperty({ type: DestinationDto })
  @ValidateNested()
  @Type(() => DestinationDto)
  destination!: DestinationDto;
}
