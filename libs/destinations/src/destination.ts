import { DatabaseDestination, PipelineDefinition, SchemaField } from '@tapyard/pipelines';
import { ValidationError } from '@tapyard/core';
import { ProcessName } from '@tapyard/status';

/** Where one job's rows go, and the columns they carry (the pipeline's output schema). */
export interface LoadTarget {
  environment: string;
  destination: PipelineDefinition['destination'];
  columns: SchemaField[];
  pipelineToken: string;
}

/** The database section a database destination needs. */
export function databaseOf(destination: PipelineDefinition['destination']): DatabaseDestination {
  if (!destination.database) throw new ValidationError('the pipeline has no destination.database');
  return destination.database;
}

/** A row that could not be loaded, kept with its reason (never silently dropped). */
export interface RejectedRow {
  line: number;
  stage: string;
  reason: string;
  raw: string;
}

export interface LoadResult {
  loaded: number;
  rejected: number;
  /** True when an earlier delivery of the same job had already committed: nothing was written now. */
  alreadyLoaded: boolean;
  location: string;
  /** Where rejected rows went, when not `<location>_rejects`. */
  rejectsLocation?: string;
}

/**
 * A destination plug-in. `load` receives rows as COPY-text chunks (tab-separated, `\N` for null,
 * lines ending in `\n`) and the rejected rows, and must have an exactly-once effect per
 * pipelineToken: a second delivery of a committed job writes nothing.
 */
export interface Destination {
  readonly name: string;
  readonly processName: ProcessName;
  readonly capabilities: { readonly exactlyOnce: boolean; readonly schemaEvolution: boolean };
  prepare(target: LoadTarget): Promise<void>;
  load(
    target: LoadTarget,
    chunks: AsyncIterable<string>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<LoadResult>;
  /** Removes the loaded data (deleteData=true). */
  drop(destination: PipelineDefinition['destination'], environment: string): Promise<void>;
}

/** Injection token of the name → destination registry. */
export const DESTINATIONS = Symbol('Destinations');
export type DestinationRegistry = ReadonlyMap<string, Destination>;
