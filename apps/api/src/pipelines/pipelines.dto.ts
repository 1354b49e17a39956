import { OptionalNotNull } from '@tapyard/core';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsInt, IsString, Max, MaxLength, Min } from 'class-validator';
import { toBool } from '../http/query-transforms';

export class SavePipelineResultDto {
  @ApiProperty({ example: 'ok' }) status!: string;
  @ApiProperty({ example: 'sales' }) name!: string;
  @ApiProperty({ example: 3, description: 'Definition version: 1 at creation, +1 per change' })
  version!: number;
}

export class PipelineListItemDto {
  @ApiProperty({ example: 'sales' }) name!: string;
  @ApiProperty({ example: 'finance', nullable: true, type: String }) catalog!: string | null;
  @ApiProperty({ example: 'csv' }) sourceType!: string;
  @ApiProperty({ example: ['postgres'], type: [String] }) destinations!: string[];
  @ApiProperty({ example: 2 }) version!: number;
  @ApiProperty({ example: '2026-11-22T05:03:48.143Z' }) updatedAt!: string;
}

export class SkippedObjectDto {
  @ApiProperty({ example: 'PostgreSQL table tapyard.public.sales' }) object!: string;
  @ApiProperty({ example: 'this pipeline did not create it: left in place' }) reason!: string;
}

export class DeletePipelineResultDto {
  @ApiProperty({ example: 'ok' }) status!: string;
  @ApiProperty({ example: 'sales' }) pipeline!: string;
  @ApiProperty({ example: true }) dataDeleted!: boolean;
  @ApiProperty({
    example: ['PostgreSQL table tapyard.public.sales', 'PostgreSQL table tapyard.public.sales_rejects'],
    type: [String],
    description: 'What deleteData=true dropped: only objects this pipeline created',
  })
  dropped!: string[];
  @ApiProperty({
    type: [SkippedObjectDto],
    description: 'Objects left in place (not created by this pipeline, already gone, or replaced since)',
  })
  skipped!: SkippedObjectDto[];
}

export class JobRowsParamsDto {
  @ApiProperty({ example: '6f1c2d9e-0c7a-4c59-9e55-2f7f1b7e0a11', description: 'The job (upload) token' })
  @IsString()
  @MaxLength(200)
  pipelineToken!: string;
}

export class RemovedJobRowsDto {
  @ApiProperty({ example: 'ok' }) status!: string;
  @ApiProperty({ example: '6f1c2d9e-0c7a-4c59-9e55-2f7f1b7e0a11' }) pipelineToken!: string;
  @ApiProperty({
    example: { postgres: 1200 },
    type: 'object',
    additionalProperties: { type: 'integer' },
    description:
      'Rows removed per destination of the pipeline that can take rows back (postgres, mongodb, objectstore)',
  })
  removed!: Record<string, number>;
}

export class PipelineQueryDto {
  @ApiProperty({ example: 'sales' })
  @IsString()
  pipeline!: string;
}

export class DeletePipelineQueryDto extends PipelineQueryDto {
  @ApiPropertyOptional({ example: false, default: false })
  @OptionalNotNull()
  @Transform(toBool)
  @IsBoolean({ message: 'deleteData must be true or false' })
  deleteData?: boolean;
}

export class StatusQueryDto {
  @ApiPropertyOptional({ description: 'All jobs of a publisher token (first in precedence)' })
  @OptionalNotNull()
  @IsString()
  publishertoken?: string;

  @ApiPropertyOptional({ description: 'One job (second in precedence)' })
  @OptionalNotNull()
  @IsString()
  pipelinetoken?: string;

  @ApiPropertyOptional({ description: 'Job summaries of a pipeline, newest first, 50 per page' })
  @OptionalNotNull()
  @IsString()
  pipelinename?: string;

  @ApiPropertyOptional({ default: 1 })
  @OptionalNotNull()
  @Transform(({ value }) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value))
  @IsInt({ message: 'page must be a positive integer' })
  @Min(1, { message: 'page must be a positive integer' })
  @Max(1000000)
  page?: number;

  @ApiPropertyOptional({ default: false, description: 'Wrap token queries as {rollup, events}' })
  @OptionalNotNull()
  @Transform(toBool)
  @IsBoolean({ message: 'withrollup must be true or false' })
  withrollup?: boolean;
}

export class StatusDeletedDto {
  @ApiProperty({ example: 12 }) deleted!: number;
}

export class UploadFormDto {
  @ApiProperty({ type: 'string', format: 'binary' }) file!: unknown;
  @ApiProperty({ example: 'sales' }) pipeline!: string;
  @ApiPropertyOptional({ example: 'nightly-2026-11-22', description: 'Groups jobs for one status query' })
  publishertoken?: string;
}

export class GenerateFormDto {
  @ApiProperty({ type: 'string', format: 'binary', description: 'CSV, TSV, JSON or XML' }) file!: unknown;
  @ApiPropertyOptional({ example: 'sales', description: 'Default: derived from the filename' })
  pipeline?: string;
  @ApiPropertyOptional({ example: ',', default: ',' }) delimiter?: string;
  @ApiPropertyOptional({ example: true, description: 'Default: detected' }) header?: boolean;
  @ApiPropertyOptional({ example: false, default: false }) allStrings?: boolean;
  @ApiPropertyOptional({ example: 'row', description: 'XML: the record element (default: guessed)' })
  rowElement?: string;
}

export class ProfileFormDto {
  @ApiProperty({ type: 'string', format: 'binary' }) file!: unknown;
  @ApiPropertyOptional({ example: ',', default: ',' }) delimiter?: string;
  @ApiPropertyOptional({ example: true, default: true }) header?: boolean;
  @ApiPropertyOptional({ example: 200, default: 200 }) sampleSize?: number;
}

export const STATUS_ENTRY_EXAMPLE = {
  id: 1,
  dateTime: '2026-11-22 05:03:48.143',
  pipeline: 'sales',
  processName: 'StreamNotifier',
  publisherToken: null,
  pipelineToken: '6f1c2d9e-0c7a-4c59-9e55-2f7f1b7e0a11',
  filename: 'sales.csv',
  state: 'begin',
  code: 'begin',
  description: 'receiving sales.csv',
  epoch: 1763787828143,
};

export const ROLLUP_EXAMPLE = {
  rollup: {
    allDone: true,
    status: 'warning',
    jobs: [
      {
        pipelineToken: '6f1c2d9e-0c7a-4c59-9e55-2f7f1b7e0a11',
        pipeline: 'sales',
        filename: 'sales.csv',
        status: 'warning',
        startedAt: '2026-11-22T05:03:48.143Z',
        lastEventAt: '2026-11-22T05:03:51.020Z',
        elapsed: '2.877s',
        lastError: null,
        rowsLoaded: 49998,
        rowsRejected: 2,
      },
    ],
  },
  events: [STATUS_ENTRY_EXAMPLE],
};

export const SUMMARY_EXAMPLE = {
  createdAtTimestamp: '2026-11-22T05:03:48.143Z',
  createdAt: 1763787828143,
  updatedAt: 1763787831020,
  pipeline: 'sales',
  pipelineToken: '6f1c2d9e-0c7a-4c59-9e55-2f7f1b7e0a11',
  process: 'JobRunner',
  startTime: '2026-11-22 05:03:48.143',
  endTime: '2026-11-22 05:03:51.020',
  totalTime: '2.877s',
  status: 'end',
};

export class PageQueryDto {
  @ApiPropertyOptional({ default: 1, description: 'Page number, from 1' })
  @OptionalNotNull()
  @Transform(({ value }) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value))
  @IsInt({ message: 'page must be a positive integer' })
  @Min(1, { message: 'page must be a positive integer' })
  @Max(1000000)
  page?: number;
}

export class JobErrorDto {
  @ApiProperty({ example: 'PostgresLoader' }) processName!: string;
  @ApiProperty({ example: 'connection refused' }) description!: string;
}

export class RecentJobDto {
  @ApiProperty({ example: '6f1c2d9e-0c7a-4c59-9e55-2f7f1b7e0a11' }) pipelineToken!: string;
  @ApiProperty({ example: 'sales' }) pipeline!: string;
  @ApiProperty({ example: 'sales-2026-11.csv' }) filename!: string;
  @ApiProperty({ enum: ['processing', 'success', 'warning', 'error', 'timed_out'] }) status!: string;
  @ApiProperty({ example: '2026-11-22T05:03:48.143Z' }) startedAt!: string;
  @ApiProperty({ example: '2026-11-22T05:03:51.020Z' }) lastEventAt!: string;
  @ApiProperty({ example: '2.877s' }) elapsed!: string;
  @ApiProperty({ type: JobErrorDto, nullable: true }) lastError!: JobErrorDto | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'null until the job ends' })
  rowsLoaded!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'null until the job ends' })
  rowsRejected!: number | null;
}

export class JobRejectDto {
  @ApiProperty({ example: 7, description: 'Line of the input (1 is the header of a CSV file with one)' })
  line!: number;
  @ApiProperty({ example: 'DataQuality' }) stage!: string;
  @ApiProperty({ example: "column 'qty': 'abc' is not an int" }) reason!: string;
}

export class JobRejectsPageDto {
  @ApiProperty({ example: '6f1c2d9e-0c7a-4c59-9e55-2f7f1b7e0a11' }) pipelineToken!: string;
  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'tapyard.public.sales_rejects',
    description: 'Where they were read; null when no destination of the pipeline keeps rows to read back',
  })
  location!: string | null;
  @ApiProperty({ example: 1 }) page!: number;
  @ApiProperty({ example: 50 }) pageSize!: number;
  @ApiProperty({ type: [JobRejectDto], description: 'In line order; fewer than pageSize on the last page' })
  rejects!: JobRejectDto[];
}

export class JobRowsPageDto {
  @ApiProperty({ example: '6f1c2d9e-0c7a-4c59-9e55-2f7f1b7e0a11' }) pipelineToken!: string;
  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'tapyard.public.sales',
    description: 'Where they were read; null when no destination of the pipeline keeps rows to read back',
  })
  location!: string | null;
  @ApiProperty({ example: 1 }) page!: number;
  @ApiProperty({ example: 50 }) pageSize!: number;
  @ApiProperty({
    type: [String],
    example: ['id', 'item'],
    description: "The pipeline's columns, in schema order",
  })
  columns!: string[];
  @ApiProperty({
    type: 'array',
    items: { type: 'object', additionalProperties: true },
    example: [{ id: 1, item: 'apple' }],
    description: 'Rows as JSON objects (column → value; dates as ISO text)',
  })
  rows!: Record<string, unknown>[];
}
