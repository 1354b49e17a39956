import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsNotEmpty,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { FIELD_TYPES, FieldType } from '@tapyard/model';

import { IDENTIFIER } from './names';

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
