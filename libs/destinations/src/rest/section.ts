import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';
import { DestinationNotAllowedError, DestinationSection } from '@tapyard/pipelines';

/**
 * Requests in flight at once unless the section says (measured: bench/sinks.ts): the receiver handles
 * one batch while the next travels and the rows of a third are read.
 */
export const REST_CONCURRENCY = 4;

export class RestDestinationDto {
  @ApiProperty({
    example: 'https://api.example.com/v1/orders',
    description: 'https (http only for endpoints in REST_SINK_ALLOW)',
  })
  @IsString()
  @MaxLength(2000)
  @Matches(/^https?:\/\/[^\s/@]+(\/[^\s]*)?$/i, {
    message: 'url must be an http(s) URL without credentials in it',
  })
  url!: string;

  @ApiPropertyOptional({
    description: 'Secret with `token` (bearer), `username` + `password` (basic), or `headerName` + `apiKey`',
  })
  @OptionalNotNull()
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: 'secretName must be a secret name' })
  secretName?: string;

  @ApiPropertyOptional({ enum: ['POST', 'PUT'], default: 'POST' })
  @OptionalNotNull()
  @IsIn(['POST', 'PUT'])
  method?: 'POST' | 'PUT';

  @ApiPropertyOptional({ default: 500, minimum: 1, maximum: 10000, description: 'Rows per request' })
  @OptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(10_000)
  batchSize?: number;

  @ApiPropertyOptional({
    default: REST_CONCURRENCY,
    minimum: 1,
    maximum: 16,
    description:
      'Requests in flight at once. Above 1, batches may arrive out of order; 1 sends each after the last was answered',
  })
  @OptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(16)
  concurrency?: number;

  @ApiPropertyOptional({
    enum: ['none', 'gzip'],
    default: 'none',
    description:
      'gzip: each body compressed, sent with Content-Encoding: gzip (for an endpoint that accepts it, over a network slower than the CPU)',
  })
  @OptionalNotNull()
  @IsIn(['none', 'gzip'])
  compression?: 'none' | 'gzip';

  @ApiPropertyOptional({
    enum: ['json', 'ndjson'],
    default: 'json',
    description: 'json: an array of row objects; ndjson: one object per line',
  })
  @OptionalNotNull()
  @IsIn(['json', 'ndjson'])
  format?: 'json' | 'ndjson';
}

export interface RestTarget {
  url: string;
  secretName: string | null;
  method: 'POST' | 'PUT';
  batchSize: number;
  /** Absent from sections stored before it existed: REST_CONCURRENCY. */
  concurrency?: number;
  /** Absent from sections stored before it existed: none. */
  compression?: 'none' | 'gzip';
  format: 'json' | 'ndjson';
}

/** Rows POSTed (or PUT) in batches to an HTTP endpoint. */
export const restSection: DestinationSection<RestDestinationDto, RestTarget> = {
  key: 'rest',
  dto: RestDestinationDto,
  description:
    'An HTTP endpoint: batches of rows as a JSON array or NDJSON, auth from a secret, an idempotency key per batch',
  complete: (r) => ({
    url: r.url,
    secretName: r.secretName ?? null,
    method: r.method ?? 'POST',
    batchSize: r.batchSize ?? 500,
    concurrency: r.concurrency ?? REST_CONCURRENCY,
    compression: r.compression ?? 'none',
    format: r.format ?? 'json',
  }),
  confine(_config, _environment, r) {
    // Addresses are judged when the rows are sent (after DNS, against REST_SINK_ALLOW): a name can move.
    if (!/^https?:\/\//i.test(r.url))
      throw new DestinationNotAllowedError(r.url.slice(0, 100), 'is not an http(s) URL');
  },
  loadedBy: () => 'rest',
  secretName: (r) => r.secretName,
};
