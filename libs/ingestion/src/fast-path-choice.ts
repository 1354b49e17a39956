import { TapyardConfig } from '@tapyard/core';
import { encodesCsv } from '@tapyard/destinations';
import { PipelineDefinition } from '@tapyard/model';
import { IngestPayload } from '@tapyard/queue';
import { fastPathBlocker } from '@tapyard/readers';
import { CODEGEN_KINDS } from '@tapyard/scripts';
import { instructionOf } from '@tapyard/codegen';
import { rulesOnFastPath } from './data-quality-rules';
import { Leg } from './job-outcome';

/**
 * Whether the job reads its file on the fast path (stage-thread/fast-csv.ts): a CSV upload with a
 * header, the default null handling and utf-8, data-quality rules the byte check can apply to each
 * field (see rulesOnFastPath), no mappings or scripts (they need every value), and one destination
 * that takes clean CSV as it is, or whose encoder writes its payloads from clean CSV chunks' fields
 * (the JSON sinks: see encodesCsv).
 */
export function takesFastPath(
  config: TapyardConfig,
  spinOn: string | null,
  p: IngestPayload,
  def: PipelineDefinition,
  legs: Leg[],
): boolean {
  const fa = def.source.fileAttributes;
  return (
    config.worker.csvFastPath &&
    spinOn === null &&
    fa.format === 'csv' &&
    p.records === undefined &&
    fa.csvAttributes.header &&
    fastPathBlocker(fa.csvAttributes) === null &&
    rulesOnFastPath(def.dataQuality.rules) &&
    def.transformation.mappings.length === 0 &&
    CODEGEN_KINDS.every((k) => instructionOf(def, k) === null) &&
    legs.length === 1 &&
    (legs[0].destination.capabilities.csvPassThrough || encodesCsv(legs[0].destination.encoder))
  );
}
