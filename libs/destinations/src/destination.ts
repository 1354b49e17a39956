import { DataLocation, DatabaseDestination, PipelineDefinition, SchemaField } from '@tapyard/pipelines';
import { ValidationError } from '@tapyard/core';
import { ProcessName } from '@tapyard/status';
import { CreatedObject } from './ownership/created-objects';

/** Where one job's rows go, and the columns they carry (the pipeline's output schema). */
export interface LoadTarget {
  environment: string;
  /** The pipeline loading: what it creates is recorded as its own (see CreatedObjects). */
  pipeline: string;
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
  /**
   * The tables or collections loads into `destination` create (none for files, whose job folders are
   * always new): what a delete reports as left in place when this pipeline did not create them.
   */
  locations(destination: PipelineDefinition['destination'], environment: string): DataLocation[];
  /**
   * Drops objects the pipeline recorded as created (deleteData=true), each only while it is still the
   * very object that was created. Throws a typed error naming the object that could not be dropped;
   * what was dropped before it is reported by the next attempt as gone.
   */
  dropCreated(objects: CreatedObject[]): Promise<DropOutcome[]>;
}

/** What became of one recorded object; `dropped` false with the reason it was left alone. */
export interface DropOutcome {
  object: CreatedObject;
  dropped: boolean;
  reason?: string;
}

/** Injection token of the name → destination registry. */
export const DESTINATIONS = Symbol('Destinations');
export type DestinationRegistry = ReadonlyMap<string, Destination>;
