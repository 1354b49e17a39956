/** The reader for a job's input, by the pipeline's format (tap output is JSON lines). */
import type { Readable } from 'node:stream';
import type { PipelineDefinition } from '@tapyard/model';
import { readCsv, readJson, FatalReadError, RecordBatch, readTapRecords, readXml } from '@tapyard/readers';

const JSON_LINES_FILE = /\.(jsonl|ndjson)$/i;

export function readInput(
  def: PipelineDefinition,
  input: Readable,
  records: { keys: string[]; columns: string[] } | null,
  filename: string,
): AsyncGenerator<RecordBatch> {
  const fa = def.source.fileAttributes;
  if (records) {
    // Tap output: JSON lines whatever the pipeline's file format (XML pipelines load JSON text too).
    return fa.format === 'csv' ? readTapRecords(input, records) : readJson(input, { lines: true });
  }
  switch (fa.format) {
    case 'json': {
      const recordPath = fa.jsonAttributes?.recordPath ?? null;
      // A JSON Lines file says so by its name; then a bad first line is a reject, not a failed file.
      const lines = !recordPath && JSON_LINES_FILE.test(filename);
      return readJson(input, { recordPath, lines });
    }
    case 'xml':
      return readXml(input, { rowElement: fa.xmlAttributes?.rowElement ?? 'row' });
    case 'csv':
      return readCsv(input, { ...fa.csvAttributes });
    default:
      throw new FatalReadError(`format '${fa.format}' cannot be loaded by an ingestion job`);
  }
}
