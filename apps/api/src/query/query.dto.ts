import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsInt,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';

export class NlQueryDto {
  @ApiProperty({ example: 'Revenue per month in 2026, highest first' })
  @IsString()
  @MaxLength(4000)
  question!: string;

  @ApiPropertyOptional({ description: "PostgreSQL database (default: the platform's, where pipelines load)" })
  @OptionalNotNull()
  @IsString()
  @MaxLength(63)
  database?: string;

  @ApiPropertyOptional({ description: "Schema (default `public`; a tenant's own in multi-tenant mode)" })
  @OptionalNotNull()
  @IsString()
  @MaxLength(63)
  schema?: string;

  @ApiPropertyOptional({
    description:
      'A statement to run instead of asking the model (typically the `sql` an `execute: false` call returned, as ' +
      'reviewed): it goes through the same checks as a written one (a single read query, only tables of the ' +
      'schema the caller may query, qualified, read-only, time-limited); `question` is kept for the record',
    example: 'SELECT count(*) FROM sales',
  })
  @OptionalNotNull()
  @IsString()
  @MaxLength(20_000)
  sql?: string;

  @ApiPropertyOptional({ default: true, description: 'false: return the SQL and explanation only' })
  @OptionalNotNull()
  @IsBoolean()
  execute?: boolean;

  @ApiPropertyOptional({ default: 100, minimum: 1, maximum: 10000 })
  @OptionalNotNull()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(10_000)
  maxRows?: number;
}

export class NlQueryResultDto {
  @ApiProperty({
    description:
      "The statement that ran: the model's (or the one given), with every table name qualified with the schema",
    example:
      "SELECT date_trunc('month', sold_at) AS month, sum(amount) AS revenue FROM public.sales GROUP BY 1 ORDER BY 2 DESC",
  })
  sql!: string;
  @ApiProperty({ type: [String], example: ['month', 'revenue'] }) columns!: string[];
  @ApiProperty({
    type: 'array',
    items: { type: 'array', items: {} },
    description: 'Rows as arrays, in the order of `columns` (int8 and numeric come as strings)',
    example: [['2026-03-01T00:00:00.000Z', '18250.00']],
  })
  rows!: unknown[][];
  @ApiProperty() rowCount!: number;
  @ApiProperty({
    description:
      'The rows are a prefix: more existed than maxRows, or the next would have taken the result over ' +
      'QUERY_MAX_RESULT_BYTES (the server stopped sending)',
  })
  truncated!: boolean;
  @ApiProperty() explanation!: string;
}

export class ContextPassageDto {
  @ApiProperty() @IsString() @MaxLength(50_000) text!: string;
  @ApiPropertyOptional() @OptionalNotNull() @IsString() @MaxLength(2000) source?: string;
}

export class AnswerDto {
  @ApiProperty({ example: 'How many vacation days do new employees get?' })
  @IsString()
  @MaxLength(4000)
  question!: string;

  @ApiProperty({ type: [ContextPassageDto], description: 'Typically the results of POST /search/{store}' })
  @IsArray()
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => ContextPassageDto)
  context!: ContextPassageDto[];
}

export class AnswerResultDto {
  @ApiProperty() answer!: string;
  @ApiProperty({ type: [String], description: 'Only sources that were given in `context`' })
  citations!: string[];
}
