import { errorMessage } from '@tapyard/core';
import { FieldType, SchemaField, TypedBatch, Value } from '@tapyard/model';
import { Payload } from '../destination';
import { jsValue } from '../js-values';
import { mongoDriver } from './mongo-driver';

/** A document as loaded: its `_id` is `<pipelineToken>:<n>`, fixed by the job. */
export type Doc = Record<string, unknown> & { _id: string };

/**
 * Builds the document of one row of a batch, or returns why it cannot. Decimals are Decimal128
 * where the server has it (`decimal128`), else their exact text.
 */
export function documentBuilder(
  columns: SchemaField[],
  decimal128: boolean,
): (batch: TypedBatch, row: number, id: string) => Doc | string {
  if (columns.length === 1 && (columns[0].name === '_json' || columns[0].name === '_xml')) {
    return (batch, row, id) => {
      const text = batch.values[0][row];
      try {
        const v = JSON.parse(typeof text === 'string' ? text : 'null') as unknown;
        if (typeof v !== 'object' || v === null || Array.isArray(v)) return { value: v, _id: id };
        // The driver refuses the whole batch for one such name; refuse just the record.
        const bad = Object.keys(v).find((k) => k.startsWith('$'));
        if (bad !== undefined)
          return `field name '${bad.slice(0, 60)}' starts with '$', which MongoDB reserves`;
        // BSON keys are C strings: the driver refuses the whole batch for one NUL in a key, at any depth.
        const nul = typeof text === 'string' && text.includes('\\u0000') ? keyWithNul(v) : null;
        if (nul !== null)
          return `field name '${JSON.stringify(nul).slice(1, -1).slice(0, 60)}' holds a NUL character, which BSON cannot store`;
        return { ...(v as Record<string, unknown>), _id: id };
      } catch (err) {
        return `record is not valid JSON: ${errorMessage(err)}`;
      }
    };
  }
  const convert = columns.map((c) => mongoValue(c.type, decimal128));
  return (batch, row, id) => {
    const doc: Doc = { _id: id };
    for (let c = 0; c < columns.length; c++) {
      const v = batch.values[c][row];
      try {
        doc[columns[c].name] = v === null ? null : convert[c](v);
      } catch (err) {
        // Decimal128 holds 34 digits: a longer decimal is refused, never rounded.
        return `${columns[c].name}: ${errorMessage(err)}`;
      }
    }
    return doc;
  };
}
export function typedBatch(payload: Payload): TypedBatch {
  if (typeof payload === 'string' || payload instanceof Uint8Array || 'kind' in payload) {
    throw new Error('the MongoDB loader takes typed batches from its encoder');
  }
  return payload;
}

/** The first key, at any depth, holding a NUL character (iterative: records may be deep). */
function keyWithNul(root: unknown): string | null {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      stack.push(...(v as unknown[]));
      continue;
    }
    for (const [k, child] of Object.entries(v as Record<string, unknown>)) {
      if (k.includes('\0')) return k;
      stack.push(child);
    }
  }
  return null;
}

/** BSON has no BigInt: integers beyond 2^53 become Int64 (Long). */
function mongoValue(type: FieldType, decimal128: boolean): (v: Exclude<Value, null>) => unknown {
  if (type === 'bigint') return (v) => (typeof v === 'bigint' ? mongoDriver().Long.fromBigInt(v) : v);
  if (type === 'decimal' && decimal128) return (v) => mongoDriver().Decimal128.fromString(String(v));
  return jsValue(type);
}
