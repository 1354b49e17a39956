import { Injectable } from '@nestjs/common';
import { isDeepStrictEqual } from 'node:util';
import type { AccessCheck, ScopeFields } from '@tapyard/auth';
import { ForbiddenError } from '@tapyard/core';
import { requireSecretUse } from '@tapyard/secrets';
import { DestinationSections } from './destination-sections';
import { PipelineConfigDto } from './dto/pipeline-config.dto';
import { pipelineScope } from './pipeline-scope';
import { PipelineDefinition, PipelineErrorCode, isDocumentPipeline } from '@tapyard/model';

export const jobNotFoundMessage = (pipelineToken: string): string =>
  `no job has pipeline token '${pipelineToken}'`;

/**
 * A load of a pipeline that may not adopt (StoredPipeline.mayAdopt) found `location` (described)
 * existing, and no pipeline of its environment created it: refused before anything is written there.
 */
export function locationUnclaimedError(pipeline: string, location: string): ForbiddenError {
  return new ForbiddenError(
    `pipeline '${pipeline}' may not load into ${location}: it exists and no pipeline of this environment ` +
      `created it, and '${pipeline}' was saved without unscoped pipeline:update; an admin (unscoped ` +
      `pipeline:update) saving the pipeline, even unchanged, lets it load there`,
  ).coded(PipelineErrorCode.LocationUnclaimed);
}

/**
 * Who may do what to a pipeline beyond the capability of the entry point (route or assistant tool,
 * checked before the call): each rule in one method, called by the service that does the work.
 */
@Injectable()
export class PipelinePolicy {
  constructor(private readonly sections: DestinationSections) {}

  /** A sink sends its secret's credentials to the address the pipeline names: like giving a secret to code. */
  assertMaySave(access: AccessCheck, config: Pick<PipelineConfigDto, 'destination'>): void {
    const named = this.sections.namedSecrets(config.destination as Record<string, unknown> | undefined);
    if (named.length > 0) requireSecretUse(access, `to hand secret '${named[0]}' to a destination`);
  }

  /**
   * Whether the pipeline the caller saves may load into a table or collection that exists but that no
   * pipeline of the environment created (a DBA's, another application's, or one left by a pipeline
   * deleted without its data): only with pipeline:update over the whole environment. A scoped key
   * names any place it likes, and `replace` would empty it on the first load; its pipelines load only
   * into places they create or that a pipeline created (checked by the loaders, see mayAdopt).
   */
  mayAdopt(access: AccessCheck): boolean {
    return access.holdsUnscoped('update', 'pipeline');
  }

  /**
   * Loading into a table or collection (`location`, described) where other pipelines already load:
   * the load could delete their rows (`replace`), overwrite them (`merge`) or add rows of its own, so
   * it needs pipeline:update over each of them, as changing those pipelines would. The refusal names
   * the place, never the other pipeline, which the caller may not be allowed to see.
   */
  assertMayLoadBeside(access: AccessCheck, location: string, others: PipelineDefinition[]): void {
    for (const other of others) {
      access.require(
        'update',
        'pipeline',
        pipelineScope(other),
        `for ${location}: a pipeline outside its scope loads there`,
      );
    }
  }

  /**
   * A load, which has no caller: a definition saved before saves checked the above may not load
   * beside a pipeline of another scope, since who saved it (and what they held) is not known. Saving
   * it again, which checks the saver, clears it.
   */
  assertStoredMayLoadBeside(
    name: string,
    def: PipelineDefinition,
    location: string,
    others: PipelineDefinition[],
  ): void {
    const own = pipelineScope(def);
    if (others.every((o) => isDeepStrictEqual(pipelineScope(o), own))) return;
    throw new ForbiddenError(
      `pipeline '${name}' may not load into ${location}: a pipeline of another scope loads there, and ` +
        `'${name}' was saved before saves checked that; save it again with pipeline:update over both to load`,
    ).coded(PipelineErrorCode.LocationUnchecked);
  }

  /**
   * Removing a job's rows: pipeline:delete in the scope its pipeline had when the job began (as reading
   * them checks), not the scope a later pipeline of the same name has; outside the caller's scope the
   * job is answered as absent.
   */
  assertMayRemoveRows(access: AccessCheck, pipelineToken: string, jobScope: ScopeFields): void {
    access.assertVisible('delete', 'pipeline', jobScope, jobNotFoundMessage(pipelineToken));
  }

  /**
   * Loading a file: pipeline:upload on the pipeline (outside the caller's scope it is answered as
   * absent), and for a document pipeline document:upload on its collection too (spec).
   */
  assertMayUpload(access: AccessCheck, name: string, def: PipelineDefinition): void {
    access.assertVisible(
      'upload',
      'pipeline',
      pipelineScope(def),
      `pipeline '${name}' does not exist`,
      PipelineErrorCode.NotFound,
    );
    const vs = def.destination.vectorStore;
    if (isDocumentPipeline(def) && vs) {
      access.require(
        'upload',
        'document',
        { collection: vs.collection },
        `for collection '${vs.collection}'`,
      );
    }
  }
}
