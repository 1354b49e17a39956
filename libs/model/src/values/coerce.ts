/**
 * Value coercion: the schema's type rules, the same for every destination. `coercer(type)` returns
 * a specialised function that checks one raw text value and returns its typed value (see Value),
 * or an Invalid holding a one-sentence reason. The rules follow PostgreSQL's input functions, so
 * what is accepted loads everywhere with the same meaning.
 *
 * Rules (documented choices):
 * - NULL is decided before coercion (the caller passes no value); a value is never NULL because of
 *   its text, except that non-string types by default (`nullTokens`) also read empty text and the
 *   tokens `NULL`, `null`, `\N`, `NA`, `N/A` as NULL (`\N`); without `nullTokens` those are errors;
 * - string: the text is kept exactly , the empty string included (so `NULL` in
 *   a string column is the four letters). A NUL character is an error (PostgreSQL text cannot
 *   hold it);
 * - boolean: true/false/t/f/yes/no/y/n/1/0, any case, become `t`/`f`;
 * - int, bigint: optional sign and decimal digits only (`1.0`, `1e3`, `1_000`, `0x1F` are
 *   errors, as PostgreSQL's int input rejects them), range-checked exactly by comparing digits
 *   (no float or BigInt conversion);
 * - float (PostgreSQL real) and double: `[+-]digits[.digits][e[+-]digits]` (`-.5`, `5.`, `1e5`);
 *   NaN, Infinity, `1,5` and values PostgreSQL reports as out of range (overflow, or a non-zero
 *   value that underflows to zero) are errors;
 * - decimal (PostgreSQL numeric): `[+-]digits[.digits]` (`-.5`, `5.`), no exponent, NaN or
 *   Infinity; never rounded: more digits after the point than the column's scale, or before it
 *   than precision - scale allow, is an error naming the limit;
 * - date: `YYYY-MM-DD`, a real calendar date (year 0001-9999);
 * - timestamp: `YYYY-MM-DD`, optionally followed by `T` or a space, `HH:MM[:SS[.fraction]]` and
 *   a zone (`Z`, `+HH`, `+HH:MM`, `+HHMM`), every field range-checked (24:00:00 and leap second
 *   :60 are accepted, as PostgreSQL does); a date alone is midnight.
 * Typed values: boolean; int, float (rounded to single precision) and double as numbers; bigint as a
 * number when it is a safe integer, else a BigInt; decimal as its canonical text (no `+`, no
 * leading zeros, `0.5` for `.5`, no sign on zero, the fraction padded to a declared scale); string, date (`YYYY-MM-DD`) and timestamp as
 * text, a timestamp normalised to `YYYY-MM-DDTHH:MM[:SS[.fraction]]` and an explicit zone (`Z` or
 * `±HH:MM`; a value without one is UTC), which PostgreSQL and JavaScript's Date both read.
 */
import type { FieldType, SchemaField } from '../pipeline.types';
import { Coerced, fail, isNullToken, quoted, trimmed } from './coerced';
import {
  INT4_NEG,
  INT4_POS,
  INT8_NEG,
  INT8_POS,
  coerceFloat,
  coerceInteger,
  decimalCoercer,
} from './coerce-numbers';
import { coerceDate, coerceTimestamp } from './coerce-dates';

export { Invalid } from './coerced';
export type { Coerced, Value } from './coerced';

const TYPE_NAMES: Record<FieldType, string> = {
  string: 'a string',
  boolean: 'a boolean',
  int: 'an int',
  bigint: 'a bigint',
  float: 'a float',
  double: 'a double',
  decimal: 'a decimal',
  date: 'a date',
  timestamp: 'a timestamp',
};

/** A decimal column's limits (see SchemaField). */
export type DecimalLimits = Pick<SchemaField, 'precision' | 'scale'>;

/**
 * A fast specialised coercion function for `type`. `nullTokens` (default): non-string types read
 * empty text and the null tokens as NULL; without it only the caller's NULL is NULL (a pipeline
 * with its own `nullValues` decides that itself), and such text is not a value of the type.
 * `limits`: a decimal column's precision and scale.
 */
export function coercer(
  type: FieldType,
  nullTokens = true,
  limits: DecimalLimits = {},
): (raw: string) => Coerced {
  const base = typeCoercer(type, limits);
  if (nullTokens || type === 'string') return base;
  return (raw) => {
    const s = trimmed(raw);
    return isNullToken(s) ? fail(`${quoted(s)} is not ${TYPE_NAMES[type]}`) : base(raw);
  };
}

function typeCoercer(type: FieldType, limits: DecimalLimits): (raw: string) => Coerced {
  switch (type) {
    case 'string':
      return coerceString;
    case 'boolean':
      return coerceBoolean;
    case 'int':
      return (raw) => coerceInteger(raw, 'an int', INT4_POS, INT4_NEG, false);
    case 'bigint':
      return (raw) => coerceInteger(raw, 'a bigint', INT8_POS, INT8_NEG, true);
    case 'float':
      return (raw) => coerceFloat(raw, true);
    case 'double':
      return (raw) => coerceFloat(raw, false);
    case 'decimal':
      return decimalCoercer(limits);
    case 'date':
      return coerceDate;
    case 'timestamp':
      return coerceTimestamp;
    default: {
      const unknown: never = type;
      throw new Error(`unknown field type ${String(unknown)}`);
    }
  }
}
function coerceString(raw: string): Coerced {
  if (raw.includes('\0'))
    return fail(
      `${quoted(raw.replaceAll('\0', '\\0'))} contains a NUL character, which a string cannot hold`,
    );
  return raw;
}

function coerceBoolean(raw: string): Coerced {
  const s = trimmed(raw);
  switch (s.length) {
    case 1:
      switch (s) {
        case 't':
        case 'T':
        case 'y':
        case 'Y':
        case '1':
          return true;
        case 'f':
        case 'F':
        case 'n':
        case 'N':
        case '0':
          return false;
      }
      break;
    case 0:
      return null;
    default:
      switch (s) {
        case 'true':
        case 'TRUE':
        case 'True':
        case 'yes':
        case 'YES':
        case 'Yes':
          return true;
        case 'false':
        case 'FALSE':
        case 'False':
        case 'no':
        case 'NO':
        case 'No':
          return false;
      }
      if (s.length <= 5) {
        const lower = s.toLowerCase();
        if (lower === 'true' || lower === 'yes') return true;
        if (lower === 'false' || lower === 'no') return false;
      }
      if (isNullToken(s)) return null;
  }
  return fail(`${quoted(s)} is not a boolean`);
}
