import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsString, MaxLength } from 'class-validator';
import { CONFIG_TYPES, SCHEMA_TYPES } from '@tapyard/configfiles';

export class ConfigUploadFormDto {
  @ApiProperty({
    type: 'string',
    format: 'binary',
    description: '.json/.xsd (validation-schema) or .js (javascript)',
  })
  file!: unknown;

  @ApiProperty({ enum: CONFIG_TYPES })
  type!: string;
}

export class GenerateSchemaDto {
  @ApiProperty({ enum: SCHEMA_TYPES, example: 'json-schema' })
  @IsIn(SCHEMA_TYPES as unknown as string[], { message: `type must be one of ${SCHEMA_TYPES.join(', ')}` })
  type!: 'json-schema' | 'xsd';

  @ApiProperty({ example: 'orders', description: 'File name without extension' })
  @IsString()
  @MaxLength(100)
  name!: string;

  @ApiProperty({
    example: '[{"id": 1, "total": 9.5, "placed": "2026-11-01"}]',
    description:
      'json-schema: a JSON document (an object or an array of sample records) or NDJSON; xsd: an XML document',
  })
  @IsString()
  sampleData!: string;
}

export class StoredConfigFileDto {
  @ApiProperty({ example: 'orders.json' })
  filename!: string;

  @ApiProperty({ example: 's3://dev-config/validation-schema/orders.json' })
  path!: string;
}

export class GeneratedSchemaDto extends StoredConfigFileDto {
  @ApiProperty({ description: 'The generated schema text' })
  schema!: string;
}
