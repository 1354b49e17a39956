import { DataQualityRule, FieldType } from '@tapyard/model';
import type { TypeNote } from './infer';
import { Quantiles } from './stats';

export interface TopValue {
  value: string;
  count: number;
}

export interface ColumnProfile {
  /** Normalised, unique column name (what the schema and rules use). */
  name: string;
  /** The header cell as written ('' when the header had none). */
  sourceName: string;
  inferredType: FieldType;
  /** `decimal` only: the proposed precision and scale (absent: no limit). */
  precision?: number;
  scale?: number;
  /** Why the column got its type, when that needs saying (a decimal's scale, values that do not fit). */
  typeNote?: TypeNote;
  /** Non-null values of the inferred type (the row count minus nullCount and the note's outliers). */
  count: number;
  /** Empty, whitespace-only and null-token cells, including cells missing from short rows. */
  nullCount: number;
  /** nullCount / row count, 0..1, rounded to 4 decimals. */
  nullRate: number;
  /** Distinct values after reading them as the inferred type (`1.0` and `1` are one double). */
  distinctCount: number;
  /**
   * Numbers for numeric types (a bigint past 2^53 as its exact digits), the ISO text of the
   * earliest/latest value for date/timestamp, code-unit order for strings; null without values.
   */
  min: string | number | null;
  max: string | number | null;
  /** Numeric types only. */
  quantiles: Quantiles | null;
  /** Of the trimmed values' lengths in characters; all zero when the column has no values. */
  lengthQuantiles: Quantiles;
  /** Most frequent values (in their canonical form), by count descending then value ascending. */
  topValues: TopValue[];
  /** Numeric types only. */
  mean?: number;
  /** Numeric types only; population standard deviation. */
  stddev?: number;
}

export type QualityIssueKind =
  | 'mixed_types'
  | 'duplicate_rows'
  | 'duplicate_values'
  | 'outliers'
  | 'blank_header'
  | 'duplicate_header'
  | 'high_null_rate'
  | 'constant_column'
  | 'ragged_rows'
  | 'leading_zeros'
  | 'whitespace';

export interface QualityIssue {
  /** Normalised column name, or null for table-wide issues. */
  column: string | null;
  kind: QualityIssueKind;
  severity: 'info' | 'warning' | 'error';
  message: string;
  count?: number;
}

export interface DataProfile {
  rowCount: number;
  columnCount: number;
  columns: ColumnProfile[];
  issues: QualityIssue[];
  recommendations: string[];
  suggestedRules: DataQualityRule[];
}

export interface ProfileOptions {
  /** How many top values to keep per column; default 5. */
  topK?: number;
  /**
   * Whether the rows are the whole file: only then are range rules proposed (a head's min and max
   * say nothing of the rest). Default false.
   */
  wholeFile?: boolean;
}
