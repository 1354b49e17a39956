import { ObjectFormat, TypedBatch, rowText } from '@tapyard/model';
import { ProcessName } from '@tapyard/status';
import { LoadTarget, Payload, RejectedRow } from './destination';
import { jsValue } from './js-values';
import { openRowWriter } from './objectstore/file-writers';
import { decimalBytes, fixedDecimal } from './objectstore/parquet-decimal';

/** A payload from the typed encoder (what file-writing loaders and sinks receive). */
export function typedBatch(p: Payload): TypedBatch {
  if (typeof p === 'object' && p !== null && 'values' in p && 'lines' in p) return p as TypedBatch;
  throw new Error('this loader takes typed batches from its encoder');
}

/**
 * The job's rows as one local file in `format` (object-store parts, warehouse staging). In Parquet,
 * a decimal beyond its column's fixed precision and scale (UNDECLARED_DECIMAL when it has none) is
 * refused (`reject`), never rounded.
 * Returns the rows written.
 */
export async function writeRowFile(
  format: ObjectFormat,
  file: string,
  target: LoadTarget,
  payloads: AsyncIterable<Payload>,
  progress: (rowsSoFar: number) => void,
  stage: ProcessName,
  reject: (row: RejectedRow) => Promise<void>,
): Promise<number> {
  const writer = await openRowWriter(format, file, target.columns);
  const convert = target.columns.map((c) => jsValue(c.type));
  const decimals = target.columns.map((c) =>
    format === 'parquet' && c.type === 'decimal' ? fixedDecimal(c) : null,
  );
  const row: unknown[] = new Array(target.columns.length);
  let loaded = 0;
  try {
    for await (const payload of payloads) {
      const b = typedBatch(payload);
      for (let r = 0; r < b.lines.length; r++) {
        let problem: string | null = null;
        for (let c = 0; c < row.length; c++) {
          const v = b.values[c][r];
          const d = decimals[c];
          row[c] = v === null ? null : d !== null ? decimalBytes(String(v), d) : convert[c](v);
          if (typeof row[c] === 'string' && d !== null)
            problem = `${target.columns[c].name}: ${String(row[c])}`;
        }
        if (problem !== null) {
          await reject({ line: b.lines[r], stage, reason: problem, raw: rowText(b, r) });
          continue;
        }
        await writer.write(row);
        loaded++;
      }
      progress(loaded);
    }
  } finally {
    await writer.close();
  }
  return loaded;
}
