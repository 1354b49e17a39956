import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, Matches } from 'class-validator';
import { OptionalNotNull } from '@tapyard/core';
import { DestinationSection, assertLocationAllowed, confinementOf } from '@tapyard/pipelines';
import { ObjectStoreDestination } from '@tapyard/model';

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

/** Loaded rows as files: `<bucket>/<prefix>/job=<pipelineToken>/part-00000.<format>`. */
export const objectStoreSection: DestinationSection<ObjectStoreDestinationDto, ObjectStoreDestination> = {
  key: 'objectStore',
  dto: ObjectStoreDestinationDto,
  description: 'Files in the object store: Parquet, CSV or JSON lines, one folder per job',
  complete: (os) => ({
    bucket: os.bucket ?? null,
    prefix: os.prefix.replace(/\/+$/, ''),
    format: os.format ?? 'parquet',
  }),
  confine(config, environment, os) {
    const bucket = os.bucket ?? confinementOf(config, environment).outputBucket;
    assertLocationAllowed(config, environment, { store: 'objectstore', bucket, prefix: os.prefix });
  },
  loadedBy: () => 'objectstore',
};
