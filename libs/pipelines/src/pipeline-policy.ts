import { Injectable } from '@nestjs/common';
import type { AccessCheck } from '@tapyard/auth';
import { requireSecretUse } from '@tapyard/secrets';
import { DestinationSections } from './destination-sections';
import { PipelineConfigDto } from './dto/pipeline-config.dto';
import { pipelineScope } from './pipeline-scope';
import { PipelineDefinition, PipelineErrorCode, isDocumentPipeline } from '@tapyard/model';

export const jobNotFoundMessage = (pipelineToken: string): string =>
  `no job has pipeline token '${pipelineToken}'`;

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
   * Removing a job's rows: pipeline:delete on the job's pipeline; outside the caller's scope the job
   * is answered as absent.
   */
  assertMayRemoveRows(access: AccessCheck, pipelineToken: string, def: PipelineDefinition): void {
    access.assertVisible('delete', 'pipeline', pipelineScope(def), jobNotFoundMessage(pipelineToken));
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
