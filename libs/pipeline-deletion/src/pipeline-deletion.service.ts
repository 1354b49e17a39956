import {
  SinkLedger,
  CreatedObject,
  CreatedObjects,
  DESTINATIONS,
  DestinationRegistry,
  DropOutcome,
} from '@tapyard/destinations';
import { CodegenService } from '@tapyard/codegen';
import { IncidentsService } from '@tapyard/incidents';
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, TapyardConfig, errorMessage } from '@tapyard/core';
import { VectorContainers, VectorStoresService } from '@tapyard/vector-stores';
import { PipelineDefinition } from '@tapyard/model';
import {
  PipelinesService,
  assertLocationAllowed,
  describeLocation,
  DestinationSections,
} from '@tapyard/pipelines';
import { LedgerService } from '@tapyard/taps';

export interface DeletionReport {
  /** Objects dropped, e.g. `PostgreSQL table tapyard.public.sales`. */
  dropped: string[];
  /** Objects left in place, each with the reason. */
  skipped: { object: string; reason: string }[];
}

/**
 * `DELETE /pipeline`, in this order:
 * 1. with deleteData, mark the pipeline as being deleted: from then on no load starts and no change
 *    is saved, and the mark waits for loads that are creating tables or writing files;
 * 2. drop what the pipeline recorded as created (PostgreSQL: all tables of a database in one
 *    transaction), forgetting each record once its object is gone;
 * 3. clear the document ledgers of the taps that target it;
 * 4. delete the configuration (its remaining records go with it).
 * Compensation is forward only: a step that fails answers its error and leaves the pipeline marked,
 * so it takes no loads while some of its data may be gone; repeating the DELETE resumes where it
 * stopped (dropped objects are then found gone, ledger clearing repeats harmlessly).
 */
@Injectable()
export class PipelineDeletionService {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(DESTINATIONS) private readonly destinations: DestinationRegistry,
    private readonly pipelines: PipelinesService,
    private readonly created: CreatedObjects,
    private readonly ledger: LedgerService,
    private readonly vectorStores: VectorStoresService,
    private readonly containers: VectorContainers,
    private readonly sinks: SinkLedger,
    private readonly codegen: CodegenService,
    private readonly incidents: IncidentsService,
    private readonly sections: DestinationSections,
  ) {}

  async delete(environment: string, name: string, deleteData: boolean): Promise<DeletionReport> {
    const { definition } = await this.pipelines.get(environment, name);
    if (!deleteData) {
      // Its scripts are part of the configuration (the repository keeps its own history).
      await this.codegen.deletePipeline(environment, name);
      await this.incidents.deletePipeline(environment, name);
      await this.pipelines.delete(environment, name);
      return { dropped: [], skipped: [] };
    }
    await this.pipelines.markDeleting(environment, name);
    const report = await this.dropCreated(environment, name, definition);
    // Sinks cannot take back what they delivered; the rows they refused, kept here, go with the data.
    const refused = await this.sinks.forgetPipeline(environment, name);
    if (refused > 0) report.dropped.push(`${refused} rejected row(s) kept for the pipeline's sinks`);
    await this.ledger.clearForPipeline(environment, name);
    await this.codegen.deletePipeline(environment, name);
    await this.incidents.deletePipeline(environment, name);
    await this.pipelines.delete(environment, name);
    return report;
  }

  private async dropCreated(
    environment: string,
    name: string,
    definition: PipelineDefinition,
  ): Promise<DeletionReport> {
    const report: DeletionReport = { dropped: [], skipped: [] };
    const records = await this.created.list(environment, name);
    const droppable: CreatedObject[] = [];
    for (const r of records) {
      try {
        // Checked again here: a record is never a licence to drop outside the confinement.
        assertLocationAllowed(this.config, environment, r);
        droppable.push(r);
      } catch (err) {
        report.skipped.push({ object: describeLocation(r), reason: errorMessage(err) });
        await this.created.forget([r.creationId]);
      }
    }
    for (const store of new Set(droppable.map((r) => r.store))) {
      const mine = droppable.filter((r) => r.store === store);
      const destination = this.destinations.get(store);
      const outcomes =
        store === 'vectorstore'
          ? await this.dropContainers(environment, mine)
          : destination
            ? await destination.drop(mine)
            : [];
      await this.created.forget(outcomes.map((o) => o.object.creationId));
      for (const o of outcomes) {
        if (o.dropped) report.dropped.push(describeLocation(o.object));
        else report.skipped.push({ object: describeLocation(o.object), reason: o.reason ?? 'left in place' });
      }
    }
    const recorded = new Set(records.map(describeLocation));
    for (const store of this.sections.loadersOf(definition)) {
      for (const l of this.destinations.get(store)?.locations(definition.destination, environment) ?? []) {
        const object = describeLocation(l);
        if (!recorded.has(object)) {
          report.skipped.push({ object, reason: 'this pipeline did not create it: left in place' });
        }
      }
    }
    const vs = definition.destination.vectorStore;
    if (vs) {
      const container = `${vs.store} container ${vs.store === 'pgvector' ? `${vs.schema ?? 'public'}.` : ''}${vs.collection}`;
      if (!recorded.has(container)) {
        report.skipped.push({ object: container, reason: 'this pipeline did not create it: left in place' });
      }
    }
    // Listed in a stable order, whatever order the records and drops came in.
    report.dropped.sort();
    report.skipped.sort((a, b) => a.object.localeCompare(b.object));
    return report;
  }

  /** Vector-store containers the pipeline created, dropped through the environment's store client. */
  private async dropContainers(environment: string, records: CreatedObject[]): Promise<DropOutcome[]> {
    const outcomes: DropOutcome[] = [];
    for (const r of records) {
      if (r.store !== 'vectorstore') continue;
      const store = await this.vectorStores.find(environment, r.vectorStore);
      if (!store) {
        outcomes.push({
          object: r,
          dropped: false,
          reason: `${r.vectorStore} is no longer configured: left in place`,
        });
        continue;
      }
      // A container made again under the same name by another tool (its creation mark differs) is
      // theirs now: left in place, and this pipeline's record of it forgotten.
      if (
        r.marked &&
        (await store.creationMark(r.container)) !== r.creationId &&
        (await store.exists(r.container))
      ) {
        outcomes.push({
          object: r,
          dropped: false,
          reason:
            'is no longer the container this pipeline created (its creation mark differs): left in place',
        });
        continue;
      }
      await store.drop(r.container);
      await this.containers.forget(environment, r.vectorStore, r.container);
      outcomes.push({ object: r, dropped: true });
    }
    return outcomes;
  }
}
