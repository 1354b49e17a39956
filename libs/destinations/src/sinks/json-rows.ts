import { TypedBatch, rowObject } from '@tapyard/model';

// A marker no value can contain by chance: bigints are written as JSON numbers with every digit.
const BIG = `\u0000big${Math.random().toString(36).slice(2)}:`;
const BIG_RE = new RegExp(`"${BIG.replace('\u0000', '\\\\u0000')}(-?\\d+)"`, 'g');

/** One row as a JSON object text: dates and timestamps as ISO strings, bigints exact. */
export function jsonRow(batch: TypedBatch, row: number): string {
  const text = JSON.stringify(rowObject(batch, row), (_k, v: unknown) =>
    typeof v === 'bigint' ? `${BIG}${v}` : v,
  );
  return text.includes('big') ? text.replace(BIG_RE, '$1') : text;
}
