import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsNotEmpty, IsObject, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';

const NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

export class SearchRequestDto {
  @ApiProperty({ example: 'How many days of annual leave do I get?', maxLength: 8000 })
  @IsString()
  @IsNotEmpty({ message: 'query must not be empty' })
  @MaxLength(8000)
  query!: string;

  @ApiPropertyOptional({ default: 5, minimum: 1, maximum: 100 })
  @OptionalNotNull()
  @IsInt({ message: 'topK must be a whole number from 1 to 100' })
  @Min(1, { message: 'topK must be a whole number from 1 to 100' })
  @Max(100, { message: 'topK must be a whole number from 1 to 100' })
  topK?: number;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { filename: 'handbook.pdf', year: [2025, 2026] },
    description:
      'Metadata conditions, all of which must hold: a value is equality, a list is "any of". Keys: uri, filename, chunkIndex, pipeline, tap, contentHash, title, or a tap metadata key.',
  })
  @OptionalNotNull()
  @IsObject()
  filter?: Record<string, unknown>;

  @ApiPropertyOptional({
    example: 'handbook',
    description: 'Qdrant, Milvus, Chroma: the collection (required).',
  })
  @OptionalNotNull()
  @Matches(NAME, { message: 'collection must be 1-63 letters, digits, _ and -' })
  collection?: string;

  @ApiPropertyOptional({
    example: 'Handbook',
    default: 'Documents',
    description: 'Weaviate: the class (PascalCase).',
  })
  @OptionalNotNull()
  @Matches(/^[A-Z][_0-9A-Za-z]{0,62}$/, {
    message: 'className must be PascalCase: a capital letter, then letters, digits or _',
  })
  className?: string;

  @ApiPropertyOptional({ example: 'handbook', description: 'pgvector: the table (required).' })
  @OptionalNotNull()
  @Matches(NAME, { message: 'table must be 1-63 letters, digits, _ and -' })
  table?: string;

  @ApiPropertyOptional({
    example: 'public',
    default: 'public',
    description:
      "pgvector: the schema of the table. Default `public`, or in multi-tenant mode the tenant's own `t_<tenant>`, " +
      'the only one a tenant may name.',
  })
  @OptionalNotNull()
  // `-` too: a tenant's schema is `t_` and its environment name, which may hold one.
  @Matches(NAME, { message: 'schema must be 1-63 letters, digits, _ and -' })
  schema?: string;
}
