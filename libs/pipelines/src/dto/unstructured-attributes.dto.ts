import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsBoolean,
  IsIn,
  IsInt,
  IsString,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';

export const CHUNK_BOUNDARY_NAMES = ['paragraph', 'sentence', 'heading'] as const;

export class ChunkingDto {
  @ApiPropertyOptional({
    example: 200,
    default: 200,
    minimum: 16,
    maximum: 8192,
    description:
      "Most tokens per chunk, counted by the embedding model's tokenizer (capped at what the model reads: 254 for the built-in model).",
  })
  @OptionalNotNull()
  @IsInt({ message: 'chunking.size must be a whole number of tokens' })
  @Min(16)
  @Max(8192)
  size?: number;

  @ApiPropertyOptional({
    example: 30,
    default: 30,
    minimum: 0,
    description:
      'Tokens at the end of a chunk repeated at the start of the next (whole sentences or words; at most half of size).',
  })
  @OptionalNotNull()
  @IsInt({ message: 'chunking.overlap must be a whole number of tokens' })
  @Min(0)
  @Max(4096)
  overlap?: number;

  @ApiPropertyOptional({
    enum: CHUNK_BOUNDARY_NAMES,
    default: 'paragraph',
    description:
      'Where a chunk prefers to end: `heading` (before a Markdown heading: sections stay together), `paragraph`, `sentence`. A chunk never ends inside a word.',
  })
  @OptionalNotNull()
  @IsIn(CHUNK_BOUNDARY_NAMES as unknown as string[])
  boundary?: (typeof CHUNK_BOUNDARY_NAMES)[number];
}

export class DocumentMetadataDto {
  @ApiPropertyOptional({
    type: [String],
    example: ['author', 'department'],
    description:
      "Keys of the tap's own record `metadata` kept on every chunk (default: all). The platform's keys (uri, filename, chunkIndex, pipeline, tap, contentHash, ingestedAt, title) are always kept.",
  })
  @OptionalNotNull()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @Matches(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, {
    each: true,
    message: 'metadata.keep entries must be 1-64 letters, digits or _',
  })
  keep?: string[];
}

export class ParserOptionsDto {
  @ApiPropertyOptional({
    default: 2000,
    minimum: 1,
    maximum: 100000,
    description: 'PDF: pages read at most (later pages are left out with a warning).',
  })
  @OptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(100000)
  maxPages?: number;

  @ApiPropertyOptional({
    default: 20000000,
    minimum: 1000,
    maximum: 200000000,
    description: 'Characters of text kept at most (the rest is left out with a warning).',
  })
  @OptionalNotNull()
  @IsInt()
  @Min(1000)
  @Max(200_000_000)
  maxChars?: number;

  @ApiPropertyOptional({ default: true, description: 'HTML and DOCX: keep link text, drop link targets.' })
  @OptionalNotNull()
  @IsBoolean()
  htmlIgnoreLinks?: boolean;
}

/**
 * `source.fileAttributes.unstructuredAttributes`: how a document pipeline parses, chunks and labels
 * documents. `{}` takes the defaults, which suit prose.
 */
export class UnstructuredAttributesDto {
  @ApiPropertyOptional({ type: ChunkingDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => ChunkingDto)
  chunking?: ChunkingDto;

  @ApiPropertyOptional({ type: ParserOptionsDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => ParserOptionsDto)
  parser?: ParserOptionsDto;

  @ApiPropertyOptional({ type: DocumentMetadataDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => DocumentMetadataDto)
  metadata?: DocumentMetadataDto;
}
