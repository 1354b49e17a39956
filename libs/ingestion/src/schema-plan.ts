import type { PipelineDefinition } from '@tapyard/model';
import { sniffDelimiter, uniqueNames } from '@tapyard/profiling';
import { StageError } from './stage-error';

/** What a job does with its file's columns, by the pipeline's schema contract. */
export interface ColumnPlan {
  /** The schema names of the file's columns, in file order. */
  fileColumns: string[];
  /** Columns to add to the schema before loading (contract `evolve`). */
  evolve: string[];
  /** What the job's end says about the columns (a `warning`), or null. */
  note: string | null;
}

/**
 * The file's columns against the pipeline's schema and its contract: `evolve` adds unknown columns
 * (as string), `freeze` refuses any difference, `discard_columns` drops unknown ones, `discard_rows`
 * leaves them to reject the rows that fill them. A header mostly foreign to the schema is refused in
 * every mode, as the likely wrong file or delimiter. Throws a StageError when the job must not load.
 */
export function planColumns(
  def: PipelineDefinition,
  first: { header: string[] | null; width: number | null },
): ColumnPlan {
  const fields = def.source.schemaProperties.fields;
  const fa = def.source.fileAttributes;
  if (fa.format !== 'csv') return { fileColumns: [fields[0]?.name ?? '_json'], evolve: [], note: null };

  const width = first.header?.length ?? first.width ?? fields.length;
  const fileColumns = first.header
    ? uniqueNames(first.header)
    : Array.from({ length: width }, (_, i) => fields[i]?.name ?? `column_${i + 1}`);
  const known = new Set(fields.map((f) => f.name));
  const unknown = fileColumns.filter((c) => !known.has(c));
  const present = new Set(fileColumns);
  const missing = fields.map((f) => f.name).filter((c) => !present.has(c));
  const contract = def.schemaContract ?? 'evolve';
  if (first.header && foreignHeader(fileColumns.length, unknown.length, fields.length, missing.length)) {
    throw new StageError(
      'DataQuality',
      `the file looks like another file: ${unknown.length} of its ${fileColumns.length} columns ` +
        `(${list(unknown)}) are not in the pipeline schema and it lacks ${missing.length} of the schema's ` +
        `${fields.length} (${list(missing)}); check the delimiter ('${fa.csvAttributes.delimiter}') and header ` +
        'settings, and that this is the right file' +
        otherDelimiter(first.header, fa.csvAttributes.delimiter, known),
    );
  }
  if (contract === 'freeze' && (unknown.length > 0 || missing.length > 0)) {
    throw new StageError(
      'DataQuality',
      "the file's columns differ from the pipeline schema (schema contract 'freeze'): " +
        [
          unknown.length > 0 ? `added ${list(unknown)}` : '',
          missing.length > 0 ? `missing ${list(missing)}` : '',
        ]
          .filter(Boolean)
          .join('; '),
    );
  }
  if (unknown.length === 0) return { fileColumns, evolve: [], note: null };
  if (contract === 'discard_columns') {
    return {
      fileColumns,
      evolve: [],
      note: `columns not in the schema dropped (schema contract 'discard_columns'): ${list(unknown)}`,
    };
  }
  if (contract === 'discard_rows') return { fileColumns, evolve: [], note: null };
  return {
    fileColumns,
    evolve: unknown,
    note: `new columns added to the schema as string (schema contract 'evolve'): ${list(unknown)}`,
  };
}

/** How many names a message lists before it says how many more there are. */
const LISTED = 10;

function list(names: string[]): string {
  return names.length <= LISTED
    ? names.join(', ')
    : `${names.slice(0, LISTED).join(', ')} and ${names.length - LISTED} more`;
}

/**
 * A header is foreign to the schema when most of its columns are unknown and it lacks at least half
 * of the schema's: a file that adds columns beside the schema's own is an evolution, not a wrong file.
 */
function foreignHeader(
  fileColumns: number,
  unknown: number,
  schemaColumns: number,
  missing: number,
): boolean {
  return unknown * 2 > fileColumns && missing * 2 >= schemaColumns;
}

/**
 * `; the file looks ';'-delimited`, when the header read with another delimiter than the pipeline's
 * names columns of the schema (a European export into a comma pipeline); else nothing.
 */
function otherDelimiter(header: string[], delimiter: string, known: Set<string>): string {
  const line = header.join(delimiter);
  const sniffed = sniffDelimiter(`${line}\n`);
  if (sniffed === delimiter || !line.includes(sniffed)) return '';
  if (!uniqueNames(line.split(sniffed)).some((n) => known.has(n))) return '';
  return `; the file looks ${sniffed === '\t' ? 'tab' : `'${sniffed}'`}-delimited`;
}
