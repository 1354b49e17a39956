import { PipelineDefinition } from '@tapyard/model';

/**
 * The fields capability scopes check on a pipeline and on everything under it (its jobs, their status,
 * the taps feeding it): `catalog`, `database` (destination dbName) and `type` (source format).
 */
export function pipelineScope(
  def: Pick<PipelineDefinition, 'catalog' | 'destination' | 'source'>,
): Record<string, string | null> {
  return {
    catalog: def.catalog ?? null,
    database: def.destination?.database?.dbName ?? null,
    type: def.source?.fileAttributes?.format ?? null,
  };
}
