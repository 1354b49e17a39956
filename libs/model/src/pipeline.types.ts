/**
 * The pipeline configuration, as plain types shared by every domain (the validated DTO classes in
 * dto/ mirror them for the HTTP layer and OpenAPI).
 */
export const FIELD_TYPES = [
  'boolean',
  'int',
  'bigint',
  'float',
  'double',
  'string',
  'date',
  'timestamp',
  // Beside the spec's eight: exact (PostgreSQL numeric), for money and quantities.
  'decimal',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** PostgreSQL's own limit on a declared numeric precision. */
export const DECIMAL_MAX_PRECISION = 1000;

export interface SchemaField {
  name: string;
  type: FieldType;
  /**
   * `decimal` only: total significant digits (1..1000) and digits after the point (0..precision;
   * absent with a precision means 0, as in PostgreSQL's `numeric(p)`). Both absent: no limit.
   */
  precision?: number;
  scale?: number;
}

export type SourceFormat = 'csv' | 'json' | 'xml' | 'unstructured';

/**
 * What a job does with file columns the schema does not have (and, for `freeze`, with schema columns
 * the file lacks); dlt's names. Absent from a stored definition: `evolve`.
 */
export const SCHEMA_CONTRACTS = ['evolve', 'freeze', 'discard_columns', 'discard_rows'] as const;
export type SchemaContract = (typeof SCHEMA_CONTRACTS)[number];

export interface CsvAttributes {
  /** One character; `\t` for TSV. Default `,`. */
  delimiter: string;
  /** Whether the first row names the columns. Default true. */
  header: boolean;
  /** Quote character, default `"`; null disables quoting. */
  quote: string | null;
  /** Escape character inside quotes, default the quote itself (RFC 4180 doubled quotes). */
  escape: string | null;
  /** `utf-8` (default) or `latin1`. */
  encoding: 'utf-8' | 'latin1';
  /**
   * Unquoted field texts read as NULL, in every column (a quoted field is never NULL, as in
   * PostgreSQL's CSV import). Absent: an unquoted empty field is NULL, and non-string columns also
   * read `NULL`, `null`, `\N`, `NA` and `N/A` (quoted or not) as NULL.
   */
  nullValues?: string[];
}

export interface JsonAttributes {
  /** Dot path to the array of records inside a JSON document, e.g. `data.items`; empty = top level. */
  recordPath: string | null;
}

export interface XmlAttributes {
  /** Name of the element that holds one record, e.g. `row`. */
  rowElement: string;
}

/** Declarative data-quality rules, checked per row after type coercion. */
export type DataQualityRule =
  | { type: 'not_null'; column: string }
  | { type: 'unique'; column: string }
  | { type: 'range'; column: string; min?: number | string; max?: number | string }
  | { type: 'regex'; column: string; pattern: string }
  | { type: 'allowed_values'; column: string; values: string[] }
  /** Values must coerce to the column's schema type (always on for typed columns; listed for clarity). */
  | { type: 'type_conformance'; column: string };

/** Declarative mapping steps, applied in order after data quality. */
export type TransformationStep =
  | { op: 'rename'; from: string; to: string }
  | { op: 'cast'; column: string; type: FieldType }
  | { op: 'drop'; column: string }
  /** `expression`: a column name, a literal, or a simple expression (see docs/pipelines.md, "Configuration"). */
  | { op: 'derive'; column: string; type: FieldType; expression: string };

export const OBJECT_FORMATS = ['parquet', 'csv', 'jsonl'] as const;
export type ObjectFormat = (typeof OBJECT_FORMATS)[number];

/** Loaded rows as files: `<bucket>/<prefix>/job=<pipelineToken>/part-00000.<format>`. */
export interface ObjectStoreDestination {
  /** null: the environment's `<env>-output` bucket. */
  bucket: string | null;
  prefix: string;
  format: ObjectFormat;
}

/** Vector stores a pipeline can load documents into (spec: document taps need one). */
export const VECTOR_STORES = ['qdrant', 'pgvector', 'weaviate', 'milvus', 'chroma'] as const;
export type VectorStoreName = (typeof VECTOR_STORES)[number];

export interface VectorStoreDestination {
  store: VectorStoreName;
  /** Collection, class or table of the store that receives the chunks. */
  collection: string;
  /** pgvector only: the table's schema (default `public`; a tenant's own schema in multi-tenant mode). */
  schema?: string;
}

/**
 * The container a store names a destination's `collection` by (each store's `containerName`, and the
 * place saves compare): the pgvector table in its schema, Weaviate's class (first letter capitalised,
 * `-` as `_`), Milvus's collection (`-` as `_`), Qdrant's and Chroma's as given.
 */
export function vectorContainerName(store: VectorStoreName, collection: string, schema = 'public'): string {
  switch (store) {
    case 'pgvector':
      return `${schema}.${collection}`;
    case 'weaviate':
      return collection.charAt(0).toUpperCase() + collection.slice(1).replace(/-/g, '_');
    case 'milvus':
      return collection.replace(/-/g, '_');
    case 'qdrant':
    case 'chroma':
      return collection;
  }
}

/**
 * How a job's rows meet what the table or collection already holds: `append` adds them, `replace`
 * makes them its whole content (readers see the old content or the new, never a mix), `merge` upserts
 * them on `destination.primaryKey`.
 */
export const WRITE_MODES = ['append', 'replace', 'merge'] as const;
export type WriteMode = (typeof WRITE_MODES)[number];

/** The column every row loaded into a table or collection carries: the job's pipeline token. */
export const LOAD_ID_COLUMN = '_tapyard_load_id';

export interface DatabaseDestination {
  dbName: string;
  schema: string;
  table: string;
  usePostgres: boolean;
}

/** A stored pipeline: the validated configuration with every default filled in. */
/** How a document pipeline parses, chunks and labels documents (defaults applied). */
export interface UnstructuredAttributes {
  chunking: { size: number; overlap: number; boundary: 'paragraph' | 'sentence' | 'heading' };
  /** Keys of a tap record's own `metadata` kept on chunks; null keeps all. */
  metadata: { keep: string[] | null };
  parser: Required<ParserOptions>;
}

/** How documents are read (`unstructuredAttributes.parser`). */
export interface ParserOptions {
  /** PDF pages read at most; later pages are left out with a warning. */
  maxPages?: number;
  /** Characters of text kept at most; the rest is left out with a warning. */
  maxChars?: number;
  /** HTML and DOCX: drop link targets, keep link text. */
  htmlIgnoreLinks?: boolean;
}

export const PARSER_DEFAULTS: Required<ParserOptions> = {
  maxPages: 2000,
  maxChars: 20_000_000,
  htmlIgnoreLinks: true,
};

export const CHUNKING_DEFAULTS: UnstructuredAttributes['chunking'] = {
  size: 200,
  overlap: 30,
  boundary: 'paragraph',
};

/** Documents, not rows: parsed, chunked and embedded into the pipeline's vector store. */
export function isDocumentPipeline(def: PipelineDefinition): boolean {
  return def.source.fileAttributes.unstructuredAttributes != null;
}

/** The stored attributes with defaults filled in (older definitions may hold other keys: ignored). */
export function unstructuredAttributes(raw: unknown): UnstructuredAttributes {
  const r = (raw ?? {}) as {
    chunking?: Partial<UnstructuredAttributes['chunking']>;
    metadata?: { keep?: string[] | null };
    parser?: ParserOptions;
  };
  return {
    chunking: { ...CHUNKING_DEFAULTS, ...stripNulls(r.chunking ?? {}) },
    metadata: { keep: r.metadata?.keep ?? null },
    parser: { ...PARSER_DEFAULTS, ...stripNulls(r.parser ?? {}) },
  };
}

function stripNulls<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as Partial<T>;
}

export interface PipelineDefinition {
  name: string;
  catalog: string | null;
  description?: string;
  /** Absent: `evolve`. */
  schemaContract?: SchemaContract;
  source: {
    fileAttributes: {
      format: SourceFormat;
      csvAttributes: CsvAttributes;
      jsonAttributes?: JsonAttributes;
      xmlAttributes?: XmlAttributes;
      unstructuredAttributes: UnstructuredAttributes | null;
    };
    schemaProperties: { fields: SchemaField[] };
  };
  /** `validationSchema`: a JSON Schema file in the environment's validation-schema location. */
  dataQuality: { rules: DataQualityRule[]; aiInstruction: string | null; validationSchema?: string };
  transformation: { mappings: TransformationStep[]; aiInstruction: string | null };
  destination: {
    database?: DatabaseDestination;
    objectStore?: ObjectStoreDestination;
    vectorStore?: VectorStoreDestination;
    /** Absent in definitions stored before write modes existed: `append`. */
    writeMode?: WriteMode;
    /** `merge`: the columns a row is matched on. */
    primaryKey?: string[];
  } & Record<string, unknown>;
}

export interface StoredPipeline {
  definition: PipelineDefinition;
  version: number;
  updatedAt: Date;
  /** Set when a delete with data began and has not finished (see PipelinesService.markDeleting). */
  deletingSince: Date | null;
  /** Its loaded rows carry LOAD_ID_COLUMN (pipelines created since write modes exist). */
  loadId: boolean;
  /**
   * Saved since saves check who else loads where it loads (PipelinesService.save); false for a
   * definition stored before, which loads beside no pipeline of another scope until it is saved again.
   */
  locationsChecked: boolean;
  /**
   * May load into a table or collection that exists but that no pipeline of its environment created:
   * last saved by a caller holding unscoped pipeline:update (or stored before the rule). False when a
   * scoped caller saved it: its loads then create their places or use ones a pipeline created.
   */
  mayAdopt: boolean;
}
