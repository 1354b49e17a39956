import type { MetadataValue } from '../vector-store';
import { VectorStoreInputError } from '../vector-store.errors';

/**
 * A GraphQL `where` operand: `path` is a checked property name; values are written as GraphQL
 * literals (strings JSON-escaped, which GraphQL reads alike; finite numbers; booleans), never spliced.
 */
export function weaviateCondition(
  path: string,
  dataType: string,
  value: MetadataValue | MetadataValue[],
): string {
  const values = Array.isArray(value) ? value : [value];
  const literals = values.map(graphqlLiteral);
  return (
    `{path: [${JSON.stringify(path)}], operator: ${Array.isArray(value) ? 'ContainsAny' : 'Equal'}, ` +
    `${valueField(dataType, values[0])}: ${Array.isArray(value) ? `[${literals.join(', ')}]` : literals[0]}}`
  );
}

export function weaviateWhere(conditions: string[]): string {
  return conditions.length === 1 ? conditions[0] : `{operator: And, operands: [${conditions.join(', ')}]}`;
}

/** The `value…` field for a property's data type (by the value's own type for one Weaviate did not say). */
function valueField(dataType: string, sample: MetadataValue | undefined): string {
  switch (dataType.replace(/\[\]$/, '')) {
    case 'text':
    case 'string':
    case 'uuid':
      return 'valueText';
    case 'int':
      return 'valueInt';
    case 'number':
      return 'valueNumber';
    case 'boolean':
      return 'valueBoolean';
    default:
      return typeof sample === 'number'
        ? 'valueNumber'
        : typeof sample === 'boolean'
          ? 'valueBoolean'
          : 'valueText';
  }
}

export function graphqlLiteral(v: MetadataValue): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  throw new VectorStoreInputError('a filter value must be text, a finite number or a boolean');
}
