import { DatabaseDestination, SchemaField } from '@tapyard/pipelines';
import { ProcessName } from '@tapyard/status';

/** Where one job's rows go, and the columns they carry (the pipeline's output schema). */
export interface LoadTarget {
  database: DatabaseDestination;
  columns: SchemaField[];
  pipelineToken: string;
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
  drop(database: DatabaseDestination): Promise<void>;
}

/** Injection token of the name → destination registry. */
export const DESTINATIONS = Symbol('Destinations');
export type DestinationRegistry = ReadonlyMap<string, Destination>;
