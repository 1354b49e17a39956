import { Inject, Injectable } from '@nestjs/common';
import { DESTINATIONS, DestinationRegistry, destinationsFor } from '@tapyard/destinations';
import { DestinationSections, PipelinesService } from '@tapyard/pipelines';
import { PipelineDefinition } from '@tapyard/model';
import { StatusService } from '@tapyard/status';
import { BlastRadius } from './incident.types';

/** An incident's `blastRadius`: what a change to a pipeline's output reaches. */
@Injectable()
export class BlastRadiusReader {
  constructor(
    @Inject(DESTINATIONS) private readonly destinations: DestinationRegistry,
    private readonly pipelines: PipelinesService,
    private readonly sections: DestinationSections,
    private readonly status: StatusService,
  ) {}

  /**
   * What a change to the pipeline's output reaches, from what Tapyard knows: its destinations and
   * sinks, the other pipelines loading the same tables, collections, topics or endpoints, and the taps
   * feeding it (whose records' contract is its schema). Tapyard keeps no lineage beyond these.
   */
  async of(
    environment: string,
    def: PipelineDefinition,
    feedingTaps: (environment: string, pipeline: string) => Promise<string[]>,
  ): Promise<BlastRadius> {
    const datasets = this.datasetsOf(def);
    const keys = new Set(datasets.map(datasetKey));
    const sharing = (await this.pipelines.listWithDefinitions(environment))
      .filter(
        (p) => p.item.name !== def.name && this.datasetsOf(p.definition).some((d) => keys.has(datasetKey(d))),
      )
      .map((p) => p.item.name)
      .sort();
    const feeding = await feedingTaps(environment, def.name);
    // When those datasets were last written: the latest job of this pipeline or of those sharing them.
    let lastRun = 0;
    for (const name of [def.name, ...sharing]) {
      const [latest] = await this.status.summariesOfPipeline(environment, name, 1);
      if (latest) lastRun = Math.max(lastRun, latest.updatedAt);
    }
    return {
      downstreamPipelines: sharing,
      downstreamDatasets: datasets,
      ucTables: datasets.filter((d) => d.kind === 'databricks').map((d) => d.coords),
      consumersFromContracts: feeding.map((tap) => `tap:${tap}`).sort(),
      lastDownstreamRunAt: lastRun > 0 ? new Date(lastRun).toISOString() : '',
      agentsThatQueriedLast7d: [],
      secretName: this.sections.namedSecrets(def.destination)[0] ?? '',
    };
  }

  private datasetsOf(def: PipelineDefinition): { kind: string; coords: string }[] {
    return destinationsFor(this.destinations, def.destination).map((d) => ({
      kind: d.name,
      coords: d.describe(def.destination),
    }));
  }
}

const datasetKey = (d: { kind: string; coords: string }): string => `${d.kind}\0${d.coords}`;

export function emptyBlastRadius(): BlastRadius {
  return {
    downstreamPipelines: [],
    downstreamDatasets: [],
    ucTables: [],
    consumersFromContracts: [],
    lastDownstreamRunAt: '',
    agentsThatQueriedLast7d: [],
    secretName: '',
  };
}
