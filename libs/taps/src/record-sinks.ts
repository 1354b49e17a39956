import { createHash } from 'node:crypto';
import { baseColumnName } from '@tapyard/profiling';
import type { RecordChunk } from '@tapyard/sandbox';
import { DocumentRecord, SAMPLE_ROWS } from './tap.types';

/** A record the platform cannot take; the run stops and reports this message. */
export class RecordShapeError extends Error {}

/**
 * Gives each record key a column name the way CSV headers are normalised (lowercase, `[a-z0-9_]`,
 * `%` → `percent`), in order of first appearance; two keys that normalise alike get `_2`, `_3`...
 */
export class ColumnNamer {
  readonly keys: string[] = [];
  readonly columns: string[] = [];
  private readonly byKey = new Map<string, string>();
  private readonly taken = new Set<string>();

  name(key: string): string {
    let name = this.byKey.get(key);
    if (name !== undefined) return name;
    const base = baseColumnName(key) || `column_${this.keys.length + 1}`;
    name = base;
    for (let n = 2; this.taken.has(name); n++) name = `${base}_${n}`;
    this.byKey.set(key, name);
    this.taken.add(name);
    this.keys.push(key);
    this.columns.push(name);
    return name;
  }

  /** Registers the record's keys; returns the record with normalised keys. */
  normalise(record: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(record)) out[this.name(k)] = record[k];
    return out;
  }

  observe(record: Record<string, unknown>): void {
    for (const k in record) if (!this.byKey.has(k)) this.name(k);
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return `a ${typeof v}`;
}

/** Structured records are objects (one row each). */
export function asRow(record: unknown, index: number): Record<string, unknown> {
  if (record !== null && typeof record === 'object' && !Array.isArray(record))
    return record as Record<string, unknown>;
  throw new RecordShapeError(
    `record ${index} is ${describe(record)}; a structured tap yields objects (dicts), one per row`,
  );
}

/** Spec: document records are `{uri, filename, content}` strings; test output adds hash and metadata. */
export function asDocument(record: unknown, index: number): DocumentRecord {
  const r = asRow(record, index);
  for (const k of ['uri', 'filename', 'content'] as const) {
    if (typeof r[k] !== 'string' || (k !== 'content' && (r[k] as string).length === 0)) {
      throw new RecordShapeError(
        `document record ${index} needs a string '${k}' (documents are {uri, filename, content})`,
      );
    }
  }
  const content = r.content as string;
  const meta = r.metadata !== null && typeof r.metadata === 'object' ? (r.metadata as object) : {};
  return {
    ...r,
    uri: r.uri as string,
    filename: r.filename as string,
    content,
    content_hash: createHash('sha256').update(content).digest('hex'),
    metadata: { ...meta, sizeBytes: Buffer.byteLength(content) },
  };
}

export interface RecordSink {
  /** One batch as the script produced it, and the index of its first record. A rejection stops the run. */
  add(chunk: RecordChunk, first: number): void | Promise<void>;
}

/** Test mode: the first SAMPLE_ROWS records (normalised for `csv`), the count and the columns. */
export class SampleSink implements RecordSink {
  readonly records: unknown[] = [];
  count = 0;
  readonly namer = new ColumnNamer();

  constructor(private readonly dataType: 'csv' | 'json' | 'document') {}

  add(chunk: RecordChunk, first: number): void {
    chunk.records.forEach((r, i) => this.one(r, first + i));
  }

  private one(record: unknown, index: number): void {
    this.count++;
    if (this.dataType === 'document') {
      const doc = asDocument(record, index);
      if (this.records.length < SAMPLE_ROWS) this.records.push(doc);
      return;
    }
    const row = asRow(record, index);
    if (this.dataType === 'json') {
      if (this.records.length < SAMPLE_ROWS) this.records.push(row);
      this.namer.observe(row);
      return;
    }
    if (this.records.length < SAMPLE_ROWS) this.records.push(this.namer.normalise(row));
    else this.namer.observe(row);
  }

  get columns(): string[] | null {
    if (this.dataType === 'document' || this.count === 0) return null;
    return this.dataType === 'csv' ? this.namer.columns : this.namer.keys;
  }
}
