import { Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { CONFIG, TapyardConfig, UnsupportedMediaTypeError, ValidationError } from '@tapyard/core';
import { CsvAttributes, FieldType, PipelineErrorCode, SchemaField } from '@tapyard/model';
import { destinationDefaults } from '@tapyard/pipelines';
import {
  DataProfile,
  TypeNote,
  detectHeader,
  inferSchema,
  normalizeColumnName,
  profileColumns,
  sniffContent,
  sniffDelimiter,
} from '@tapyard/profiling';
import { readCsv, readJson, readXml, FatalReadError, RecordBatch } from '@tapyard/readers';
import { findRecordPath } from '@tapyard/schemas';
import { UploadedSample, boolField, bufferStream, intField, readUploadedSample } from './sample';
import { UploadErrorCode } from './upload-errors';

/** Generate and profile look at the head of the file only: inference is bounded whatever its size. */
export const SAMPLE_BYTES = 8 * 1024 * 1024;
const GENERATE_ROWS = 1000;

export interface GeneratedPipeline {
  name: string;
  source: {
    fileAttributes: {
      format: 'csv' | 'json' | 'xml';
      csvAttributes?: CsvAttributes;
      jsonAttributes?: { recordPath: string };
      xmlAttributes?: { rowElement: string };
    };
    schemaProperties: { fields: SchemaField[] };
  };
  destination: { database: { dbName: string; schema: string; table: string; usePostgres: boolean } };
  /** Columns whose type needs explaining (a decimal's scale, values that do not fit); absent when none. */
  typeNotes?: (TypeNote & { column: string; type: FieldType })[];
}

/** `POST /pipeline/generate` and `POST /pipeline/profile`: everything computed by code, deterministically. */
@Injectable()
export class SchemaDiscoveryService {
  constructor(@Inject(CONFIG) private readonly config: TapyardConfig) {}

  /** The proposal's destination is the environment's default place (a tenant's own schema). */
  async generate(environment: string, req: Request, examples?: string[][]): Promise<GeneratedPipeline> {
    return this.generateFromSample(environment, await readUploadedSample(req, SAMPLE_BYTES), examples);
  }

  /** The same proposal from a file's head (an assistant attachment); at most SAMPLE_BYTES are read. */
  /** `examples` (CSV only) receives the first data rows, for advice that needs a look at values. */
  async generateFromSample(
    environment: string,
    sample: UploadedSample,
    examples?: string[][],
  ): Promise<GeneratedPipeline> {
    assertDataFile(sample, 'a pipeline is proposed from CSV, JSON or XML samples only');
    const name = pipelineName(sample.fields.get('pipeline')?.trim() || sample.filename);
    const format = detectFormat(sample);
    const defaults = destinationDefaults(this.config, environment);
    const destination = {
      database: {
        dbName: defaults.postgresDatabase,
        schema: defaults.schema,
        table: tableName(name),
        usePostgres: true,
      },
    };
    if (format === 'json') {
      // Records wrapped in an object (`{"data": {"items": [...]}}`) are read from their array, not
      // loaded as one row holding the whole document.
      const recordPath = findRecordPath(sample.head.toString('utf8'));
      await firstBatch(readJson(bufferStream(sample.head), { recordPath }), sample.truncated);
      return {
        name,
        source: {
          fileAttributes: { format, ...(recordPath ? { jsonAttributes: { recordPath } } : {}) },
          schemaProperties: { fields: [{ name: '_json', type: 'string' }] },
        },
        destination,
      };
    }
    if (format === 'xml') {
      const rowElement =
        sample.fields.get('rowElement')?.trim() || guessRowElement(sample.head.toString('utf8'));
      await firstBatch(readXml(bufferStream(sample.head), { rowElement }), sample.truncated);
      return {
        name,
        source: {
          fileAttributes: { format, xmlAttributes: { rowElement } },
          schemaProperties: { fields: [{ name: '_xml', type: 'string' }] },
        },
        destination,
      };
    }
    const delimiter = delimiterOf(sample);
    const rows = await csvRows(sample, delimiter, GENERATE_ROWS + 1);
    const header = boolField(sample.fields, 'header') ?? detectHeader(rows.slice(0, 50));
    const headerRow = header ? (rows[0] ?? []) : [];
    const dataRows = header ? rows.slice(1) : rows;
    const allStrings = boolField(sample.fields, 'allStrings') ?? false;
    const typeNotes: GeneratedPipeline['typeNotes'] = [];
    const fields = inferSchema(headerRow, dataRows, { allStrings }, typeNotes);
    examples?.push(...dataRows.slice(0, 3));
    return {
      name,
      source: {
        fileAttributes: {
          format: 'csv',
          csvAttributes: { delimiter, header, quote: '"', escape: '"', encoding: 'utf-8' },
        },
        schemaProperties: { fields },
      },
      destination,
      ...(typeNotes.length > 0 ? { typeNotes } : {}),
    };
  }

  async profile(req: Request): Promise<DataProfile & { sampleSize: number; filename: string }> {
    const sample = await readUploadedSample(req, SAMPLE_BYTES * 4);
    assertDataFile(sample, 'the profile reads CSV samples only');
    const sampleSize = intField(sample.fields, 'sampleSize', 200, 1, 100000);
    const delimiter = delimiterOf(sample);
    const header = boolField(sample.fields, 'header') ?? true;
    // One row more than the sample: whether the sample is the whole file (ranges need that).
    const read = await csvRows(sample, delimiter, sampleSize + (header ? 2 : 1));
    const rows = read.slice(0, sampleSize + (header ? 1 : 0));
    const wholeFile = !sample.truncated && read.length === rows.length;
    const headerRow = header ? (rows[0] ?? []) : (rows[0]?.map((_, i) => `column_${i + 1}`) ?? []);
    const dataRows = header ? rows.slice(1) : rows;
    return { filename: sample.filename, sampleSize, ...profileColumns(headerRow, dataRows, { wholeFile }) };
  }
}

/** 415 naming what the file is, by its content: a PDF named data.csv is still a PDF. */
function assertDataFile(sample: UploadedSample, only: string): void {
  const sniffed = sniffContent(sample.head);
  if (sniffed.kind === 'binary') {
    throw new UnsupportedMediaTypeError(
      `'${sample.filename}' is ${sniffed.type}, not a data file: ${only}`,
    ).coded(PipelineErrorCode.UnsupportedFile);
  }
}

function detectFormat(sample: UploadedSample): 'csv' | 'json' | 'xml' {
  const ext = /\.([a-z0-9]+)$/i.exec(sample.filename)?.[1]?.toLowerCase();
  if (ext === 'json' || ext === 'ndjson' || ext === 'jsonl') return 'json';
  if (ext === 'xml') return 'xml';
  if (ext === 'csv' || ext === 'tsv' || ext === 'txt') return 'csv';
  const first = sample.head
    .toString('utf8', 0, 256)
    .replace(/^\uFEFF/, '')
    .trimStart()[0];
  return first === '[' || first === '{' ? 'json' : first === '<' ? 'xml' : 'csv';
}

/** Bytes of the head the delimiter is sniffed from (its first lines). */
const SNIFF_BYTES = 64 * 1024;

/** The form's `delimiter`, else tab for `.tsv`, else the one sniffed from the head (`;` exports, TSV named .csv). */
function delimiterOf(sample: UploadedSample): string {
  const d = sample.fields.get('delimiter');
  if (d === undefined || d === '') {
    if (/\.tsv$/i.test(sample.filename)) return '\t';
    return sniffDelimiter(sample.head.toString('utf8', 0, SNIFF_BYTES).replace(/^\uFEFF/, ''));
  }
  const v = d === '\\t' || d.toLowerCase() === 'tab' ? '\t' : d;
  if (v.length !== 1)
    throw new ValidationError(`delimiter must be one character (got '${d.slice(0, 10)}')`).coded(
      UploadErrorCode.InvalidField,
    );
  return v;
}

/** Rows of the CSV head, read without a header so the caller decides; a cut-off last line is dropped. */
async function csvRows(sample: UploadedSample, delimiter: string, limit: number): Promise<string[][]> {
  const rows: string[][] = [];
  try {
    for await (const batch of readCsv(bufferStream(sample.head), {
      delimiter,
      header: false,
      quote: '"',
      escape: '"',
      encoding: 'utf-8',
      nullValues: [],
    })) {
      for (const row of batch.rows) rows.push(row.map((c) => c ?? ''));
      if (rows.length >= limit + 1) break;
    }
  } catch (err) {
    if (err instanceof FatalReadError)
      throw new ValidationError(`cannot read the file as CSV: ${err.message}`).coded(
        UploadErrorCode.Unreadable,
      );
    throw err;
  }
  if (sample.truncated && rows.length > 1) rows.pop();
  return rows.slice(0, limit);
}

async function firstBatch(gen: AsyncGenerator<RecordBatch>, truncated: boolean): Promise<void> {
  try {
    const first = await gen.next();
    if (!first.done && first.value.rows.length === 0 && first.value.errors.length > 0 && !truncated) {
      throw new ValidationError(`the file has no valid record: ${first.value.errors[0].reason}`).coded(
        UploadErrorCode.Unreadable,
      );
    }
    await gen.return(undefined);
  } catch (err) {
    if (err instanceof FatalReadError)
      throw new ValidationError(err.message).coded(UploadErrorCode.Unreadable);
    throw err;
  }
}

/** The first element inside the root element (`<root><row>…</row><row>…`), else the root's, else `row`. */
export function guessRowElement(head: string): string {
  // Two start tags are all it needs: collecting every one of an 8 MiB head took 450 MiB.
  const tag = /<([A-Za-z_][\w.-]*)[\s>/]/g;
  const root = tag.exec(head);
  const row = root && tag.exec(head);
  return row?.[1] ?? root?.[1] ?? 'row';
}

export function pipelineName(raw: string): string {
  const base = raw.replace(/^.*[\\/]/, '').replace(/\.(csv|tsv|txt|json|ndjson|jsonl|xml)$/i, '');
  return normalizeColumnName(base).slice(0, 128) || 'pipeline';
}

function tableName(name: string): string {
  const t = name.replace(/[^a-z0-9_]/g, '_').slice(0, 63);
  return /^[a-z_]/.test(t) ? t : `t_${t}`.slice(0, 63);
}
