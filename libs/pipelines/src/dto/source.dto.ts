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
import { DECIMAL_MAX_PRECISION, FIELD_TYPES, FieldType } from '@tapyard/model';

import { IDENTIFIER } from './names';

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
