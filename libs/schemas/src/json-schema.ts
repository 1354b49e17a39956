import { JsonRecord, parseJsonSample } from './json-sample';
import { MAX_SAMPLE_DEPTH, SchemaSampleError } from './sample-error';
import { isCalendarDate, isDateTime } from './temporal';

export { SchemaSampleError } from './sample-error';

type JsonType = 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object';

/** What the samples seen at one position (a property, or the items of an array) look like. */
interface ValueStats {
  types: Set<JsonType>;
  strings: number;
  dates: number;
  dateTimes: number;
  object: ObjectStats | null;
  /** Every element of every array seen here, merged; null until an element is seen. */
  items: ValueStats | null;
}

interface ObjectStats {
  count: number;
  /** Insertion order is the order of first appearance, which the output keeps. */
  properties: Map<string, PropertyStats>;
}

interface PropertyStats {
  present: number;
  value: ValueStats;
}

/** Schema output: a Map is a JSON object whose key order is kept exactly (numeric keys included). */
type Out = string | boolean | Out[] | Map<string, Out>;

/**
 * Infers a JSON Schema (draft 2020-12) describing one record of `sampleData`: a JSON object, an
 * array of objects (several records) or NDJSON. Throws SchemaSampleError when the sample is
 * none of these.
 */
export function generateJsonSchema(name: string, sampleData: string): string {
  const records = parseJsonSample(sampleData);
  const root = newObjectStats();
  for (const record of records) addObject(root, record, 1);
  const schema = new Map<string, Out>([
    ['$schema', 'https://json-schema.org/draft/2020-12/schema'],
    // $id is a URI reference, so a name with spaces or slashes is percent-encoded.
    ['$id', `${encodeURIComponent(name)}.json`],
    ['title', name],
    ['type', 'object'],
    ...objectKeywords(root),
  ]);
  return `${render(schema, '')}\n`;
}

function newValueStats(): ValueStats {
  return { types: new Set(), strings: 0, dates: 0, dateTimes: 0, object: null, items: null };
}

function newObjectStats(): ObjectStats {
  return { count: 0, properties: new Map() };
}

function typeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'boolean':
      return 'boolean';
    case 'string':
      return 'string';
    case 'object':
      return 'object';
    case 'number':
      return Number.isInteger(value) ? 'integer' : 'number';
    default:
      // JSON.parse yields nothing else.
      throw new TypeError(`unexpected ${typeof value} in a parsed JSON sample`);
  }
}

function addValue(stats: ValueStats, value: unknown, depth: number): void {
  if (depth > MAX_SAMPLE_DEPTH) {
    throw new SchemaSampleError(`the sample nests deeper than ${MAX_SAMPLE_DEPTH} levels`);
  }
  const type = typeOf(value);
  stats.types.add(type);
  if (typeof value === 'string') {
    stats.strings++;
    if (isCalendarDate(value)) stats.dates++;
    else if (isDateTime(value)) stats.dateTimes++;
  } else if (Array.isArray(value)) {
    for (const item of value) addValue((stats.items ??= newValueStats()), item, depth + 1);
  } else if (type === 'object') {
    addObject((stats.object ??= newObjectStats()), value as JsonRecord, depth + 1);
  }
}

function addObject(stats: ObjectStats, record: JsonRecord, depth: number): void {
  stats.count++;
  for (const [key, value] of Object.entries(record)) {
    let property = stats.properties.get(key);
    if (property === undefined) {
      property = { present: 0, value: newValueStats() };
      stats.properties.set(key, property);
    }
    property.present++;
    addValue(property.value, value, depth);
  }
}

function objectKeywords(stats: ObjectStats): [string, Out][] {
  const properties = new Map<string, Out>();
  const required: string[] = [];
  for (const [key, property] of stats.properties) {
    properties.set(key, valueSchema(property.value));
    if (property.present === stats.count) required.push(key);
  }
  const keywords: [string, Out][] = [['properties', properties]];
  if (required.length > 0) keywords.push(['required', required]);
  keywords.push(['additionalProperties', true]);
  return keywords;
}

function valueSchema(stats: ValueStats): Map<string, Out> {
  const types = [...stats.types];
  // Every integer is a number, so a mix of both is just "number".
  const merged = types.includes('number') ? types.filter((type) => type !== 'integer') : types;
  merged.sort();
  const schema = new Map<string, Out>([['type', merged.length === 1 ? merged[0] : merged]]);
  const format = stringFormat(stats);
  if (format !== null) schema.set('format', format);
  if (stats.object !== null) for (const [key, value] of objectKeywords(stats.object)) schema.set(key, value);
  if (stats.items !== null) schema.set('items', valueSchema(stats.items));
  return schema;
}

function stringFormat(stats: ValueStats): string | null {
  if (stats.strings === 0) return null;
  if (stats.dates === stats.strings) return 'date';
  if (stats.dateTimes === stats.strings) return 'date-time';
  return null;
}

/** Same layout as JSON.stringify(value, null, 2), but with the key order of the Maps. */
function render(value: Out, indent: string): string {
  const inner = `${indent}  `;
  if (value instanceof Map) {
    if (value.size === 0) return '{}';
    const members = [...value].map(
      ([key, member]) => `${inner}${JSON.stringify(key)}: ${render(member, inner)}`,
    );
    return `{\n${members.join(',\n')}\n${indent}}`;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((item) => `${inner}${render(item, inner)}`).join(',\n')}\n${indent}]`;
  }
  return JSON.stringify(value);
}
