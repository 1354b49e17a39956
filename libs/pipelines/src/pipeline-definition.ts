import { ErrorDetail, ValidationError, errorMessage } from '@tapyard/core';
import {
  compileLinearRegex,
  columnsOverRuleLimit,
  MAX_RULES_PER_COLUMN,
  outputFields,
  PipelineErrorCode,
  DataQualityRule,
  FieldType,
  PipelineDefinition,
  SchemaField,
  SourceFormat,
  TransformationStep,
  WriteMode,
  LOAD_ID_COLUMN,
  CHUNKING_DEFAULTS,
  unstructuredAttributes,
} from '@tapyard/model';
import { DestinationDefaults } from './destination-confinement';
import { DestinationSections } from './destination-sections';
import { DestinationOptionsDto } from './dto/destination-options.dto';
import { PipelineConfigDto, SchemaFieldDto } from './dto/pipeline-config.dto';
import { storedFormat } from './pipeline-scope';

export { outputFields } from '@tapyard/model';

const NUMERIC: ReadonlySet<FieldType> = new Set(['int', 'bigint', 'float', 'double', 'decimal']);

/**
 * Turns a syntactically valid configuration (the DTO) into a stored definition: defaults filled in,
 * and the cross-field rules checked (unique field names, rules and mappings that refer to columns
 * that exist, compilable regexes and expressions). Every problem is reported at once.
 */
export function toDefinition(
  dto: PipelineConfigDto,
  defaults: DestinationDefaults,
  sections: DestinationSections,
): PipelineDefinition {
  // The sections' own shapes first, as the API checks a body: the rules below read valid sections.
  const configured = sections.validate(dto.destination);
  const problems: ErrorDetail[] = [];
  const fields: SchemaField[] = dto.source.schemaProperties.fields.map((f, i) =>
    schemaField(f, `source.schemaProperties.fields[${i}]`, problems),
  );
  const seen = new Set<string>();
  fields.forEach((f, i) => {
    if (seen.has(f.name))
      problems.push({
        field: `source.schemaProperties.fields[${i}].name`,
        problem: `duplicate name '${f.name}'`,
      });
    seen.add(f.name);
  });
  const fa = dto.source.fileAttributes ?? {};
  // Scopes are checked on this format before the body is validated: one function decides it for both.
  const format: SourceFormat = storedFormat(
    fa,
    fields.map((f) => f.name),
  );
  if (format === 'xml' && !fa.xmlAttributes?.rowElement) {
    problems.push({
      field: 'source.fileAttributes.xmlAttributes.rowElement',
      problem: 'is required for XML pipelines',
    });
  }
  const csv = fa.csvAttributes ?? {};
  const rules = (dto.dataQuality?.rules ?? []).map((r) => toRule(r, seen, fields, problems));
  for (const { column, rules: count } of columnsOverRuleLimit(rules)) {
    problems.push({
      field: `dataQuality.rules[${column}]`,
      problem: `has ${count} rules, more than the ${MAX_RULES_PER_COLUMN} a column may have (each runs on every value)`,
    });
  }
  const mappings = (dto.transformation?.mappings ?? []).map((m, i) => toStep(m, i, problems));
  checkMappings(fields, mappings, problems);

  const schemaFile = dto.dataQuality?.validationSchema;
  if (schemaFile !== undefined && format !== 'json' && format !== 'xml') {
    problems.push({
      field: 'dataQuality.validationSchema',
      problem: 'applies to JSON and XML pipelines only',
    });
  } else if (schemaFile !== undefined && !schemaFile.endsWith('.json') && !schemaFile.endsWith('.xsd')) {
    problems.push({
      field: 'dataQuality.validationSchema',
      problem: 'must be a JSON Schema (.json) or an XSD (.xsd)',
    });
  } else if (schemaFile !== undefined && schemaFile.endsWith('.xsd') && format !== 'xml') {
    problems.push({ field: 'dataQuality.validationSchema', problem: 'an XSD checks XML pipelines only' });
  }

  const destination: PipelineDefinition['destination'] = {};
  for (const [section, value] of configured) destination[section.key] = section.complete(value, defaults);
  if (Object.keys(destination).length === 0) {
    problems.push({
      field: 'destination',
      problem: `needs at least one of: ${sections
        .all()
        .map((s) => s.key)
        .join(', ')}`,
    });
  }

  const options = sections.options(dto.destination, DestinationOptionsDto);
  problems.push(...options.problems);
  const writeMode = options.value.writeMode ?? 'append';
  if (options.problems.length === 0) {
    checkWriteMode(writeMode, options.value.primaryKey, destination, fields, mappings, problems);
  }
  fields.forEach((f, i) => {
    if (f.name === LOAD_ID_COLUMN) {
      problems.push({
        field: `source.schemaProperties.fields[${i}].name`,
        problem: `'${LOAD_ID_COLUMN}' is reserved: every loaded row carries it (the job's pipeline token)`,
      });
    }
  });

  const chunking = fa.unstructuredAttributes?.chunking;
  if (chunking?.overlap != null && chunking.overlap * 2 > (chunking.size ?? CHUNKING_DEFAULTS.size)) {
    problems.push({
      field: 'source.fileAttributes.unstructuredAttributes.chunking.overlap',
      problem: 'must be at most half of chunking.size',
    });
  }

  if (problems.length > 0) {
    throw new ValidationError(
      `pipeline '${dto.name}' is invalid: ${problems[0].field} ${problems[0].problem}`,
      problems,
    ).coded(PipelineErrorCode.Invalid);
  }
  return {
    name: dto.name,
    catalog: dto.catalog?.trim() ? dto.catalog.trim() : null,
    ...(dto.description ? { description: dto.description } : {}),
    ...(dto.schemaContract ? { schemaContract: dto.schemaContract } : {}),
    source: {
      fileAttributes: {
        format,
        csvAttributes: {
          delimiter: csv.delimiter ?? ',',
          header: csv.header ?? true,
          quote: csv.quote === undefined ? '"' : csv.quote,
          escape: csv.escape === undefined ? (csv.quote === undefined ? '"' : csv.quote) : csv.escape,
          encoding: csv.encoding ?? 'utf-8',
          ...(csv.nullValues ? { nullValues: [...new Set(csv.nullValues)] } : {}),
        },
        ...(fa.jsonAttributes
          ? { jsonAttributes: { recordPath: fa.jsonAttributes.recordPath ?? null } }
          : {}),
        ...(fa.xmlAttributes ? { xmlAttributes: { rowElement: fa.xmlAttributes.rowElement } } : {}),
        unstructuredAttributes: fa.unstructuredAttributes
          ? unstructuredAttributes(fa.unstructuredAttributes)
          : null,
      },
      schemaProperties: { fields },
    },
    dataQuality: {
      rules,
      aiInstruction: dto.dataQuality?.aiInstruction ?? null,
      ...(dto.dataQuality?.validationSchema ? { validationSchema: dto.dataQuality.validationSchema } : {}),
    },
    transformation: { mappings, aiInstruction: dto.transformation?.aiInstruction ?? null },
    // `append` is what a definition without a mode means: not stored, so definitions saved before
    // write modes existed compare equal when saved again (no version bump).
    destination: {
      ...destination,
      ...(writeMode !== 'append' ? { writeMode } : {}),
      ...(options.value.primaryKey ? { primaryKey: options.value.primaryKey } : {}),
    },
  };
}

/** A field with a decimal's precision and scale checked: only on decimals, scale within precision. */
function schemaField(f: SchemaFieldDto, where: string, problems: ErrorDetail[]): SchemaField {
  const { precision, scale } = f;
  if (f.type !== 'decimal') {
    if (precision !== undefined || scale !== undefined)
      problems.push({
        field: `${where}.${precision !== undefined ? 'precision' : 'scale'}`,
        problem: `applies to decimal fields only, not ${f.type}`,
      });
    return { name: f.name, type: f.type };
  }
  if (scale !== undefined && precision === undefined)
    problems.push({ field: `${where}.scale`, problem: 'needs a precision' });
  if (scale !== undefined && precision !== undefined && scale > precision)
    problems.push({ field: `${where}.scale`, problem: `must be at most the precision (${precision})` });
  return {
    name: f.name,
    type: f.type,
    ...(precision !== undefined ? { precision } : {}),
    ...(scale !== undefined ? { scale } : {}),
  };
}

/**
 * `merge` needs a primary key of loaded columns and a destination that can upsert (a database);
 * `replace` needs one that holds rows (a database or the object store).
 */
function checkWriteMode(
  writeMode: WriteMode,
  primaryKey: string[] | undefined,
  destination: PipelineDefinition['destination'],
  fields: SchemaField[],
  mappings: TransformationStep[],
  problems: ErrorDetail[],
): void {
  if (writeMode !== 'merge') {
    if (primaryKey) {
      problems.push({ field: 'destination.primaryKey', problem: 'applies to writeMode merge only' });
    }
    if (writeMode === 'replace' && !destination.database && !destination.objectStore) {
      problems.push({
        field: 'destination.writeMode',
        problem: 'replace needs a database or objectStore section (sinks keep their own semantics)',
      });
    }
    return;
  }
  if (!destination.database) {
    problems.push({
      field: 'destination.writeMode',
      problem: 'merge needs a database section (PostgreSQL or MongoDB); objectStore and sinks cannot upsert',
    });
  } else if (destination.objectStore) {
    problems.push({
      field: 'destination.writeMode',
      problem: 'merge cannot apply to objectStore, which takes append or replace: use a separate pipeline',
    });
  }
  if (!primaryKey) {
    problems.push({
      field: 'destination.primaryKey',
      problem: 'is required for writeMode merge: the columns a row is matched on',
    });
    return;
  }
  let columns: string[];
  try {
    columns = outputFields(fields, mappings).map((f) => f.name);
  } catch {
    return; // the mappings are reported wrong already
  }
  const unknown = primaryKey.filter((k) => !columns.includes(k));
  if (unknown.length > 0) {
    problems.push({
      field: 'destination.primaryKey',
      problem: `names ${unknown.map((k) => `'${k}'`).join(', ')}, not among the loaded columns (${columns.join(', ')})`,
    });
  }
}

function toRule(
  r: NonNullable<PipelineConfigDto['dataQuality']>['rules'] extends (infer R)[] | undefined ? R : never,
  names: Set<string>,
  fields: SchemaField[],
  problems: ErrorDetail[],
): DataQualityRule {
  const where = `dataQuality.rules[${r.column}]`;
  if (!names.has(r.column))
    problems.push({ field: where, problem: `column '${r.column}' is not in the schema` });
  switch (r.type) {
    case 'range': {
      const type = fields.find((f) => f.name === r.column)?.type;
      if (r.min === undefined && r.max === undefined)
        problems.push({ field: where, problem: 'range needs min or max' });
      if (type && !NUMERIC.has(type) && type !== 'date' && type !== 'timestamp') {
        problems.push({
          field: where,
          problem: `range applies to numbers, dates and timestamps, not ${type}`,
        });
      }
      return {
        type: 'range',
        column: r.column,
        ...(r.min !== undefined ? { min: r.min } : {}),
        ...(r.max !== undefined ? { max: r.max } : {}),
      };
    }
    case 'regex':
      try {
        compileLinearRegex(r.pattern ?? '');
      } catch (err) {
        problems.push({
          field: `${where}.pattern`,
          problem: `pattern '${r.pattern}' is not a valid regular expression: ${errorMessage(err)}`,
        });
      }
      if (!r.pattern) problems.push({ field: where, problem: 'regex needs a pattern' });
      return { type: 'regex', column: r.column, pattern: r.pattern ?? '' };
    case 'allowed_values':
      if (!r.values?.length) problems.push({ field: where, problem: 'allowed_values needs values' });
      return { type: 'allowed_values', column: r.column, values: r.values ?? [] };
    default:
      return { type: r.type, column: r.column };
  }
}

function toStep(
  m: NonNullable<NonNullable<PipelineConfigDto['transformation']>['mappings']>[number],
  i: number,
  problems: ErrorDetail[],
): TransformationStep {
  const where = `transformation.mappings[${i}]`;
  const need = (value: string | undefined, what: string): string => {
    if (!value) problems.push({ field: where, problem: `${m.op} needs ${what}` });
    return value ?? '';
  };
  switch (m.op) {
    case 'rename':
      return { op: 'rename', from: need(m.from, 'from'), to: need(m.to, 'to') };
    case 'cast':
      return {
        op: 'cast',
        column: need(m.column, 'column'),
        type: (need(m.type, 'type') || 'string') as FieldType,
      };
    case 'drop':
      return { op: 'drop', column: need(m.column, 'column') };
    case 'derive':
      return {
        op: 'derive',
        column: need(m.column, 'column'),
        type: (m.type ?? 'string') as FieldType,
        expression: need(m.expression, 'expression'),
      };
  }
}

/** Applies the mappings to the schema, step by step, so every reference is checked in order. */
function checkMappings(fields: SchemaField[], steps: TransformationStep[], problems: ErrorDetail[]): void {
  try {
    outputFields(fields, steps);
  } catch (err) {
    if (err instanceof ValidationError)
      problems.push(...(err.details ?? [{ field: 'transformation', problem: err.message }]));
    else throw err;
  }
}
