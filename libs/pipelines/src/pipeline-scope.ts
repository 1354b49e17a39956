import { PipelineDefinition, SourceFormat } from '@tapyard/model';

/**
 * The fields capability scopes check on a pipeline and on everything under it (its jobs, their status,
 * the taps feeding it): `catalog`, `database` (destination dbName) and `type` (source format).
 */
export function pipelineScope(
  def: Pick<PipelineDefinition, 'catalog' | 'destination' | 'source'>,
): Record<string, string | null> {
  return {
    catalog: def.catalog ?? null,
    database: def.destination?.database?.dbName ?? null,
    type: def.source?.fileAttributes?.format ?? null,
  };
}

/**
 * The format a configuration is stored with (toDefinition): non-null `unstructuredAttributes` make a
 * document pipeline whatever `format` says; without a format, the schema decides.
 */
export function storedFormat(
  fileAttributes: { format?: unknown; unstructuredAttributes?: unknown },
  fieldNames: readonly string[],
): SourceFormat {
  if (fileAttributes.unstructuredAttributes != null) return 'unstructured';
  if (typeof fileAttributes.format === 'string') return fileAttributes.format as SourceFormat;
  if (fieldNames.length === 1 && fieldNames[0] === '_json') return 'json';
  if (fieldNames.length === 1 && fieldNames[0] === '_xml') return 'xml';
  return 'csv';
}

/**
 * The scope a body of POST /pipeline (or the assistant's register_pipeline) will be stored with, read
 * before the body is validated: its `type` is the stored format, so a key scoped to one type cannot
 * save a pipeline of another by giving a `format` the definition will not keep.
 */
export function pipelineBodyScope(body: Record<string, unknown>): Record<string, string | null> {
  const source = objectOf(body.source);
  const fileAttributes = objectOf(source.fileAttributes);
  const fields = objectOf(source.schemaProperties).fields;
  const names = Array.isArray(fields) ? fields.map((f) => objectOf(f).name).filter(isString) : [];
  const catalog = isString(body.catalog) && body.catalog.trim() !== '' ? body.catalog.trim() : null;
  return pipelineScope({
    catalog,
    destination: objectOf(body.destination) as PipelineDefinition['destination'],
    source: {
      fileAttributes: { format: storedFormat(fileAttributes, names) },
    } as PipelineDefinition['source'],
  });
}

function objectOf(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}
