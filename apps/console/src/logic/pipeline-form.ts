/**
 * The pipeline form of the console: a proposal of `POST /pipeline/generate` (or a stored configuration)
 * as the fields a person edits, and back into the body of `POST /pipeline`. Everything the form does
 * not show (data quality, transformation, file attributes, other destination settings) is carried over
 * untouched, so editing a column never drops a rule.
 */
export const FIELD_TYPES = [
  'string',
  'int',
  'bigint',
  'double',
  'decimal',
  'boolean',
  'date',
  'timestamp',
  'float',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export interface FormColumn {
  name: string;
  type: FieldType;
  precision?: number;
  scale?: number;
}

export interface PipelineForm {
  name: string;
  catalog: string;
  table: string;
  columns: FormColumn[];
}

/** A configuration as the API gives it (generate's proposal, or GET /pipeline): only the parts read here are typed. */
export interface ConfigLike {
  name?: string;
  catalog?: unknown;
  source?: { schemaProperties?: { fields?: FormColumn[] } } & Record<string, unknown>;
  destination?: { database?: { table?: string } & Record<string, unknown> } & Record<string, unknown>;
  [key: string]: unknown;
}

export function formOf(config: ConfigLike): PipelineForm {
  return {
    name: config.name ?? '',
    catalog: typeof config.catalog === 'string' ? config.catalog : '',
    table: config.destination?.database?.table ?? '',
    columns: (config.source?.schemaProperties?.fields ?? []).map((f) => ({ ...f })),
  };
}

/** The body of POST /pipeline: the base configuration with the form's values in place. */
export function configOf(base: ConfigLike, form: PipelineForm): Record<string, unknown> {
  // Not part of a configuration: generate's explanations, GET's version and time stamp.
  const { typeNotes: _notes, advice: _advice, version: _version, updatedAt: _updated, ...rest } = base;
  const columns = form.columns.map((c) =>
    c.type === 'decimal'
      ? c
      : // precision and scale belong to decimal only: a column changed to another type drops them.
        { name: c.name, type: c.type },
  );
  const destination = { ...(base.destination ?? {}) };
  if (destination.database || form.table !== '')
    destination.database = { ...(destination.database ?? {}), table: form.table };
  return {
    ...rest,
    name: form.name.trim(),
    catalog: form.catalog.trim() === '' ? null : form.catalog.trim(),
    source: {
      ...(base.source ?? {}),
      schemaProperties: { ...(base.source?.schemaProperties ?? {}), fields: columns },
    },
    destination,
  };
}

/** What stops the form from being sent, one sentence per problem (the API judges the rest). */
export function formProblems(form: PipelineForm): string[] {
  const problems: string[] = [];
  if (form.name.trim() === '') problems.push('The pipeline needs a name.');
  if (form.columns.length === 0) problems.push('The schema needs at least one column.');
  const seen = new Set<string>();
  for (const [i, c] of form.columns.entries()) {
    const name = c.name.trim();
    if (name === '') problems.push(`Column ${i + 1} has no name.`);
    else if (seen.has(name.toLowerCase())) problems.push(`Column '${name}' appears twice.`);
    seen.add(name.toLowerCase());
  }
  return problems;
}

/** A delete with data goes ahead only when the exact name was typed (no trimming, case counts). */
export function confirmsDeletion(typed: string, pipeline: string): boolean {
  return typed === pipeline;
}

/** A loaded value as a table cell shows it: text as is, null as an empty mark, the rest as JSON. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '∅';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}
