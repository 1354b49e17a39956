import type { FieldType, Value } from '@tapyard/model';

/**
 * Typed values as JavaScript objects for destinations that store dates as such (documents, Parquet,
 * JSON files): a date is midnight UTC, a timestamp its instant (it always carries a zone).
 */
export function jsValue(type: FieldType): (v: Exclude<Value, null>) => unknown {
  switch (type) {
    case 'date':
      return (v) => new Date(`${String(v)}T00:00:00Z`);
    case 'timestamp':
      return (v) => new Date(String(v));
    default:
      return (v) => v;
  }
}
