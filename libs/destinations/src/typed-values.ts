import type { FieldType } from '@tapyard/pipelines';

/**
 * COPY-text values (already checked by the coercer) back to JavaScript values, for destinations that
 * store types rather than text. Big integers stay exact as BigInt.
 */
export function typedValue(type: FieldType): (text: string) => unknown {
  switch (type) {
    case 'boolean':
      return (t) => t === 't';
    case 'int':
    case 'float':
    case 'double':
      return Number;
    case 'bigint':
      return (t) => (Number.isSafeInteger(Number(t)) ? Number(t) : BigInt(t));
    case 'date':
    case 'timestamp':
      return (t) => new Date(/^\d{4}-\d{2}-\d{2}$/.test(t) ? `${t}T00:00:00Z` : t);
    default:
      return (t) => t;
  }
}
