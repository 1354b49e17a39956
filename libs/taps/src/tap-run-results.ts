import { PipelineDefinition } from '@tapyard/model';
import { RunMode, RunResult, TapConfig } from './tap.types';

export type DataType = 'csv' | 'json' | 'document';

export function dataTypeOf(tap: TapConfig, target: PipelineDefinition | null): DataType {
  if (tap.tapType === 'document') return 'document';
  const format = target?.source.fileAttributes.format;
  // JSON and XML pipelines load into the document database, which keeps records as they are.
  return format === 'json' || format === 'xml' ? 'json' : 'csv';
}

/** A run's result before anything ran: what every outcome starts from. */
export function base(tap: TapConfig, mode: RunMode, dataType: string): RunResult {
  return {
    tap: tap.name,
    description: tap.description,
    status: 'success',
    mode,
    targetPipeline: tap.targetPipeline,
    persisted: false,
    pipelineTokens: [],
    recordCount: 0,
    dataType,
    columns: null,
    logs: '',
    isolation: null,
    error: null,
  };
}
