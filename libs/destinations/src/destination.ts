import { extname, join } from 'node:path';
import { DataLocation } from '@tapyard/pipelines';
import {
  CsvAttributes,
  DatabaseDestination,
  PipelineDefinition,
  SchemaField,
  TypedBatch,
  WriteMode,
} from '@tapyard/model';
import { ValidationError } from '@tapyard/core';
import { ProcessName } from '@tapyard/status';
import { CreatedObject } from './ownership/created-objects';
import { DestinationErrorCode } from './destination-errors';

/** Where one job's rows go, and the columns they carry (the pipeline's output schema). */
export interface LoadTarget {
  environment: string;
  /** The pipeline loading: what it creates is recorded as its own (see CreatedObjects). */
  pipeline: string;
  destination: PipelineDefinition['destination'];
  columns: SchemaField[];
  pipelineToken: string;
  /** The publisher token the job came under (sinks put it in their message headers). */
  publisherToken?: string | null;
  /**
   * Rows written into tables and collections carry LOAD_ID_COLUMN = pipelineToken (pipelines created
   * since write modes exist; older ones load as they always did).
   */
  loadId?: boolean;
  /**
   * False for a pipeline saved by a scoped caller (StoredPipeline.mayAdopt): a table or collection it
   * loads into must be new or created by a pipeline of its environment, which loaders check before
   * they write (locationUnclaimedError). Absent: what a load of a stored pipeline passes through as is.
   */
  mayAdopt?: boolean;
  /**
   * The size of an input the job carries whole (a small upload, IngestPayload.inline). A destination
   * whose load finds an earlier committed delivery by itself may then skip its separate check (see
   * PostgresDestination.committed).
   */
  carriedBytes?: number;
}

/** The target's write mode: definitions stored before write modes existed append. */
export function writeModeOf(target: Pick<LoadTarget, 'destination'>): WriteMode {
  return target.destination.writeMode ?? 'append';
}

/** The key a merge matches rows on (validated present at save). */
export function primaryKeyOf(target: Pick<LoadTarget, 'destination'>): string[] {
  const key = target.destination.primaryKey;
  if (!key || key.length === 0)
    throw new ValidationError('writeMode merge needs destination.primaryKey').coded(
      DestinationErrorCode.LoadRefused,
    );
  return key;
}

/** The database section a database destination needs. */
export function databaseOf(destination: PipelineDefinition['destination']): DatabaseDestination {
  if (!destination.database)
    throw new ValidationError('the pipeline has no destination.database').coded(
      DestinationErrorCode.MissingSection,
    );
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
 * Rows of the uploaded CSV file as they are, for a destination that declares `csvPassThrough`: the
 * stage thread checked that loading these bytes with `COPY … (copyOptions)` stores exactly what the
 * validating path would (libs/ingestion/src/fastpath), so no value was parsed or re-encoded.
 */
export interface CsvChunkPayload {
  kind: 'csv';
  bytes: Uint8Array;
  /** Records in `bytes`. */
  rows: number;
  /** The file's physical line where the first record starts (the lines of the rows an encoder writes). */
  line: number;
  /** The chunk's line ending (PostgreSQL takes one per COPY); null when it has no line break. */
  eol: 'lf' | 'crlf' | 'cr' | null;
  /** `FORMAT csv, DELIMITER …, QUOTE …, ESCAPE …`. */
  copyOptions: string;
  /** The file's columns, in file order. */
  columns: string[];
  /**
   * Set on the job's main thread, never sent between threads: a loader that calls it promises that
   * nothing reads or writes `bytes` any more (the socket took them), so their memory may hold the
   * next part of the input. A loader that never calls it leaves the memory to the garbage collector.
   */
  written?: () => void;
}

/**
 * Rows as JSON object texts (the json-rows encoder): one UTF-8 buffer per batch, rows one after the
 * other with a comma between them, so that any run of rows is the inside of a JSON array and a batch
 * crosses from the stage thread as one transferred buffer, not one string per row.
 */
export interface JsonRowsPayload {
  kind: 'json-rows';
  bytes: Uint8Array;
  /** Byte offset just past each row in `bytes` (the next row starts one byte further, past the comma). */
  ends: Int32Array;
  /** The source line of each row. */
  lines: Int32Array;
}

/**
 * Rows in PostgreSQL's binary COPY form (the tuples only: the loader adds the header and trailer of
 * each COPY), written from a clean CSV chunk for a table whose column types the destination's
 * preparation read (TargetShape): see postgres/copy-binary.ts.
 */
export interface PgBinaryPayload {
  kind: 'pg-binary';
  bytes: Uint8Array;
  rows: number;
  /** The file's columns, in file order (the COPY's column list). */
  columns: string[];
  /** Each column's declared type the values were written for (format_type's name). */
  types: string[];
  /** As CsvChunkPayload.written: set on the job's main thread once the socket has sent `bytes`. */
  written?: () => void;
}

/** What a destination's encoder makes of one batch, handed as is to its loader. */
export type Payload = string | Uint8Array | TypedBatch | CsvChunkPayload | JsonRowsPayload | PgBinaryPayload;

/**
 * What a destination's preparation read of its target that the encoder may rely on: the declared
 * type of each column of the target table (PostgreSQL's format_type names), by column name.
 */
export interface TargetShape {
  readonly columnTypes: Readonly<Record<string, string>>;
}

/**
 * The module a destination names as its `encoder` exports this. It runs in the job's stage thread,
 * beside the reader, so it must import nothing heavier than the value types (deep relative imports,
 * no drivers): turning typed values into the target's format there keeps that work off the thread
 * that talks to the destinations.
 */
export type EncoderFactory = (columns: SchemaField[]) => (batch: TypedBatch) => Payload;

/** The encoders a destination may name; a new one is a module here and a name in this union. */
export type EncoderName = 'copy-text' | 'json-rows' | 'typed';

const ENCODER_MODULES: Record<EncoderName, string> = {
  'copy-text': join(__dirname, 'postgres', `copy-text${extname(__filename)}`),
  'json-rows': join(__dirname, 'encoders', `json-rows${extname(__filename)}`),
  typed: join(__dirname, 'encoders', `typed${extname(__filename)}`),
};

/**
 * The encoder module of a destination that also takes CSV uploads on the fast path (see
 * encodesCsv) exports this besides its EncoderFactory: it writes its payloads from the fields of a
 * clean chunk (one the fast path's byte check passed) straight away, with the same values as the
 * typed path, in the stage thread: lazily, a few thousand rows a payload, so the thread hands each
 * piece over as it is written. `fileColumns`: the schema names of the file's columns, in file order.
 */
export type CsvEncoderFactory = (
  columns: SchemaField[],
  fileColumns: string[],
  csv: Pick<CsvAttributes, 'delimiter' | 'quote' | 'escape'>,
  /** What the destination's preparation read of the target (absent or null: nothing). */
  shape?: TargetShape | null,
) => ((chunk: CsvChunkPayload) => Iterable<Payload>) | null;

/**
 * Encoders whose module exports `createCsvEncoder` (a CsvEncoderFactory) that always writes (the
 * copy-text module's writes binary COPY only for some targets: its destination takes clean chunks
 * as they are otherwise, Capabilities.csvPassThrough).
 */
const CSV_ENCODERS: ReadonlySet<EncoderName> = new Set<EncoderName>(['json-rows']);

/**
 * Whether a destination with this encoder can take a CSV upload on the fast path: its encoder
 * writes clean chunks from their fields (no typed batch, no object per row), as PostgreSQL's
 * COPY takes them as they are (Capabilities.csvPassThrough).
 */
export function encodesCsv(name: EncoderName): boolean {
  return CSV_ENCODERS.has(name);
}

/** The absolute path of an encoder's module (it exports `createEncoder: EncoderFactory`), for the stage thread. */
export function encoderModule(name: EncoderName): string {
  return ENCODER_MODULES[name];
}

/** What the runner relies on a destination for. */
export interface Capabilities {
  /**
   * A second delivery of a committed job writes nothing. The runner retries a failed load only for
   * such destinations (a retry elsewhere could duplicate rows) and skips them on redelivery once
   * `committed` says so.
   */
  readonly exactlyOnce: boolean;
  /** New columns can be added to an existing target; without it a job that adds columns fails here. */
  readonly schemaEvolution: boolean;
  /** Most rows per payload; the runner cuts batches to this size. null: any size. */
  readonly maxBatchRows: number | null;
  /**
   * Takes clean chunks of a CSV upload as they are (CsvChunkPayload) besides its encoder's payloads:
   * when it is a job's only destination, the runner reads such files on the fast path.
   */
  readonly csvPassThrough: boolean;
  /**
   * deleteData can take back what was loaded (tables, collections, files). Sinks (endpoints, brokers)
   * cannot: what they delivered is the receiver's.
   */
  readonly retractable: boolean;
}

/**
 * A destination plug-in: one folder under libs/destinations/src and one line in registry.ts. It
 * reads the sections of `destination` it `selects`, receives the job's rows as payloads of its own
 * `encoder`, and must have an exactly-once effect per pipelineToken when it says so.
 */
export interface Destination {
  readonly name: string;
  readonly processName: ProcessName;
  readonly capabilities: Capabilities;
  /** The encoder that turns the job's typed batches into this destination's payloads. */
  readonly encoder: EncoderName;
  /** Whether a pipeline with this destination configuration loads here. */
  selects(destination: PipelineDefinition['destination']): boolean;
  /** Where the rows go, for status messages: `tapyard.public.sales`, `s3://bucket/prefix/ (parquet)`. */
  describe(destination: PipelineDefinition['destination']): string;
  /**
   * Throws ServiceUnavailableError naming the service when it cannot be reached now. Destinations
   * whose address comes with each pipeline (endpoints, brokers from secrets) check the target's.
   */
  probe(target?: LoadTarget): Promise<void>;
  /**
   * Creates what the load needs (tables, collections, buckets), recording what it created; may answer
   * what it read of the target, for the encoder (a PostgreSQL table's column types).
   */
  prepare(target: LoadTarget): Promise<TargetShape | void>;
  /**
   * The result of an earlier delivery of this job that committed here, or null. May answer null
   * without looking when the load itself answers such a delivery `alreadyLoaded` (exactly-once
   * destinations must, in load, either way).
   */
  committed(target: LoadTarget): Promise<LoadResult | null>;
  /**
   * Loads every payload, then the rejected rows (`rejects` may be called once, after the last
   * payload), with an exactly-once effect when capabilities say so. Rejected rows go where the
   * destination keeps them, streamed: nothing proportional to the input is held in memory.
   */
  load(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
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
  drop(objects: CreatedObject[]): Promise<DropOutcome[]>;
  /**
   * Removes the rows one job loaded (and the rows it rejected), by its load id or its job folder;
   * returns how many loaded rows were removed. Only destinations that can take rows back have it.
   */
  removeRows?(target: LoadTarget): Promise<number>;
  /**
   * A page of what one job left here, read back by its load id: the rows it loaded (`loaded`, each an
   * object of column → JSON value) or the rows it rejected (`rejects`, line order). Only destinations
   * that keep rows where they can be read back have it.
   */
  readRows?(target: LoadTarget, which: 'loaded' | 'rejects', page: RowsPage): Promise<ReadBack>;
}

/** Which rows of a job to read back. */
export interface RowsPage {
  limit: number;
  offset: number;
}

/** A page of a job's rows read back, and where they were read (`tapyard.public.sales`). */
export interface ReadBack {
  location: string;
  rows: Record<string, unknown>[];
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

/** The plug-ins loading a pipeline's rows, in registry order. */
export function destinationsFor(
  registry: DestinationRegistry,
  destination: PipelineDefinition['destination'],
): Destination[] {
  return [...registry.values()].filter((d) => d.selects(destination));
}
