import { Inject, Injectable, Optional } from '@nestjs/common';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import {
  DESTINATIONS,
  DestinationRegistry,
  LoadTarget,
  Payload,
  Sink,
  SinkGate,
  destinationsFor,
  encoderModule,
} from '@tapyard/destinations';
import { ConfigFilesService } from '@tapyard/configfiles';
import { DestinationSections, PipelinesService, outputFields } from '@tapyard/pipelines';
import { PipelineDefinition } from '@tapyard/model';
import { DeferLaterError, IngestPayload, RetryLaterError } from '@tapyard/queue';
import { JobEvents, ProcessName, StatusService, jobRef } from '@tapyard/status';
import { Spool } from '@tapyard/intake';
import { STAGE_SPIN_ON } from './stage-spin';
import { Staging } from '@tapyard/intake';
import { StageError, destinationError, pipelineError } from './stage-error';
import { planColumns } from './schema-plan';
import { JobOutcome, Leg } from './job-outcome';
import { Counts } from './stage-thread/protocol';
import { newCounts } from './stage-thread/convert';
import { StageStalledError, StageThreadError, StageThreadPool } from './stage-thread/stage-thread';
import { Fanout } from './fanout';
import { CodegenService } from '@tapyard/codegen';
import { jobScripts, readyJobScripts, recordLanded, validationSchemaOf } from './job-scripts';
import { takesFastPath } from './fast-path-choice';
import { prepareLegs, startProbes } from './prepare-legs';
import { inputWhole } from './job-input';
import { openStage } from './job-stage';

/** How long a job waits in the queue for a sink place: this, plus up to as much again (spread out). */
const SINK_DEFER_MS = 1000;

/** A failure of the stage thread (the input, the tap stream, the schema, the watchdog), by stage. */
function stageError(err: unknown): StageError {
  if (err instanceof StageError) return err;
  if (err instanceof StageStalledError) return new StageError(err.stage, err.message);
  if (err instanceof StageThreadError) {
    return new StageError(err.stage, err.message, false, err.failure === 'superseded');
  }
  return new StageError('DataQuality', errorMessage(err));
}

function stageFailure(err: unknown): never {
  throw stageError(err);
}

/**
 * Runs one ingestion job in a worker: read → DataQuality → Transformation (when configured) →
 * JobRunner → every destination the pipeline configures, each with its own loader stage. Rows are
 * read, checked and transformed once, batch by batch (memory is bounded by the batch size), and
 * each batch is encoded for every destination; the loaders run side by side, each writing its own
 * status events. Redelivery is safe: a destination whose exactly-once ledger says the job committed
 * there is not loaded again, so a redelivered job loads only where it had not.
 */
@Injectable()
export class IngestionRunner {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(DESTINATIONS) private readonly destinations: DestinationRegistry,
    private readonly pipelines: PipelinesService,
    private readonly status: StatusService,
    private readonly spool: Spool,
    private readonly staging: Staging,
    private readonly configFiles: ConfigFilesService,
    private readonly threads: StageThreadPool,
    private readonly codegen: CodegenService,
    private readonly sinkGate: SinkGate,
    private readonly sections: DestinationSections,
    private readonly outcome: JobOutcome,
    @Optional() @Inject(STAGE_SPIN_ON) private readonly spinOn: string | null = null,
  ) {}

  /**
   * `attempt`: which delivery this is. A destination that was unreachable, on a delivery that is not
   * the last, makes the job run again after a back-off (RetryLaterError), where only the destinations
   * that did not commit load; on the last one it ends `error` naming the service, and the job
   * `warning` when another destination loaded.
   */
  async run(p: IngestPayload, attempt: { made: number; max: number } = { made: 0, max: 1 }): Promise<void> {
    const events = this.status.of(jobRef(p), p.intakeEntries);
    let stage: ProcessName = 'JobRunner';
    let leaveGate: (() => void) | null = null;
    try {
      const {
        definition: def,
        loadId,
        mayAdopt,
      } = await this.pipelines.getForLoading(p.environment, p.pipeline).catch((err: unknown) => {
        throw pipelineError(p.pipeline, err);
      });
      const legs: Leg[] = destinationsFor(this.destinations, def.destination).map((destination) => ({
        destination,
        result: null,
        error: null,
        shape: null,
      }));
      if (legs.length === 0) {
        throw new StageError(
          'JobRunner',
          `no destination loads rows for this pipeline (its destinations: ${this.sections.loadersOf(def).join(', ') || 'none'})`,
        );
      }
      // A job for sinks takes its place before reading anything: past SINK_CONCURRENCY it goes back to
      // the queue (no delivery spent) instead of holding a worker slot while a slow endpoint answers.
      if (legs.some((l) => l.destination instanceof Sink)) {
        leaveGate = this.sinkGate.enter(p.environment, p.pipelineToken);
        if (!leaveGate) {
          const message =
            `${this.sinkGate.limit} job(s) of this environment are delivering to sinks (SINK_CONCURRENCY); ` +
            'this one waits in the queue, keeping worker slots for other pipelines';
          if (!p.deferrals) await events.record('JobRunner', 'processing', message);
          throw new DeferLaterError(message, SINK_DEFER_MS + Math.floor(Math.random() * SINK_DEFER_MS));
        }
      }
      const begin = `loading ${p.filename} into ${legs.map((l) => `${l.destination.name} ${l.destination.describe(def.destination)}`).join(', ')}`;
      // An input still arriving may keep the job waiting for its first bytes: its begin is told at once.
      // One already whole is planned within milliseconds: its begin (with its time) goes with the stages'.
      if (inputWhole(p)) events.add('JobRunner', 'begin', begin);
      else await events.record('JobRunner', 'begin', begin);
      const base: LoadTarget = {
        environment: p.environment,
        pipeline: p.pipeline,
        destination: def.destination,
        columns: [],
        pipelineToken: p.pipelineToken,
        publisherToken: p.publisherToken,
        loadId,
        mayAdopt,
        ...(p.inline !== undefined ? { carriedBytes: Buffer.byteLength(p.inline, 'base64') } : {}),
      };
      // A redelivery: destinations where an earlier delivery committed are done already.
      for (const leg of legs) {
        if (!leg.destination.capabilities.exactlyOnce) continue;
        leg.result = await leg.destination.committed(base).catch((err: unknown) => {
          leg.error = destinationError(leg.destination.processName, err);
          return null;
        });
      }

      stage = 'DataQuality';
      let counts: Counts | null = null;
      let first: { header: string[] | null; width: number | null } = { header: null, width: null };
      let transforms = false;
      let note: string | null = null;
      const pending = legs.filter((l) => l.result === null && l.error === null);
      if (pending.length > 0) {
        const read = await this.load(p, events, def, base, pending);
        if (read !== null) ({ counts, first, transforms, note } = read);
      }

      this.outcome.checked(events, legs, counts, first, transforms);
      await this.outcome.finish(events, legs, counts, note, attempt);
      await this.release(p, 'ended');
    } catch (err) {
      if (err instanceof RetryLaterError || err instanceof DeferLaterError) {
        await events.flush();
        // Another worker may take the next delivery: it copies the staged input again.
        await this.release(p, 'again');
        throw err;
      }
      if (err instanceof StageError && err.superseded) {
        // Not a failure: the tap run moved its records to another job before this one committed.
        await events.record('JobRunner', 'end', `nothing loaded here: ${err.message}`, 'success');
        await this.release(p, 'again');
        return;
      }
      const processName = err instanceof StageError ? err.processName : stage;
      const message = errorMessage(err);
      if (err instanceof StageError && err.retryable && attempt.made + 1 < attempt.max) {
        await events.record(
          processName,
          'processing',
          `${message}; will retry (delivery ${attempt.made + 1} of ${attempt.max})`,
        );
        await this.release(p, 'again');
        throw new RetryLaterError(message);
      }
      this.logger.warn({ pipelineToken: p.pipelineToken, processName, err: message }, 'ingestion job failed');
      await events.record(processName, 'error', message, 'error');
      await this.release(p, 'ended');
    } finally {
      leaveGate?.();
    }
  }

  /**
   * Once the job `ended`, removes its staged input. A job that will run `again` (or was superseded:
   * its successor reads the same input) leaves it.
   */
  private async release(p: IngestPayload, how: 'ended' | 'again'): Promise<void> {
    // An input carried in the job was never staged.
    if (how === 'ended' && p.inline === undefined)
      await this.staging.remove(p.environment, p.staged).catch(() => undefined);
  }

  /**
   * Reads the job's input once, in a stage thread (a small whole input: on this thread, see
   * job-stage.ts), and loads it into every pending destination side by side. A failure of one
   * destination is kept on its leg (the others go on); a failure of the input ends them all and is
   * thrown.
   */
  private async load(
    p: IngestPayload,
    events: JobEvents,
    def: PipelineDefinition,
    base: LoadTarget,
    legs: Leg[],
  ): Promise<{
    counts: Counts;
    first: { header: string[] | null; width: number | null };
    transforms: boolean;
    note: string | null;
  } | null> {
    const started = Date.now();
    // Reading, DataQuality and Transformation run in a stage thread under a watchdog, or, for a small
    // whole input, on this thread with the same functions (job-stage.ts).
    const fast = takesFastPath(this.config, this.spinOn, p, def, legs);
    // A small whole input's validation schema is read first: what it costs decides where the stage runs.
    // One that cannot be read is read again below, failing the job as before.
    const readSchema =
      p.inline !== undefined && def.dataQuality.validationSchema
        ? await validationSchemaOf(this.configFiles, p.environment, def).catch(() => null)
        : null;
    const stage = await openStage(
      {
        threads: this.threads,
        staging: this.staging,
        spool: this.spool,
        stallMs: this.config.worker.stageStallMs,
        maxIdle: this.config.worker.largeJobs,
        maxBusy: this.config.worker.largeJobs,
        spinOn: this.spinOn,
      },
      p,
      def,
      fast,
      readSchema,
    );
    const session = stage.session;
    // The destinations are probed while the stage thread reads the input's first part (after the
    // thread was given the job: a probe started before slowed the stage's start as much as it saved).
    const probes = startProbes(legs, base);
    // The scripts' sandboxes (cgroups, namespaces, interpreter) start while the first batch is read
    // and the load planned, not after: their start-up is much of what a script costs a short job.
    const ready = readyJobScripts(this.codegen, p.environment, def).then((scripts) => {
      session.warm((scripts ?? []).map(({ version: _version, ...spec }) => spec));
      return scripts;
    });
    let counts: Counts = newCounts();
    try {
      const first = await session.first().catch(stageFailure);
      const { fileColumns, definition, added, note } = await this.plan(p, def, first);
      const fields = definition.source.schemaProperties.fields;
      // Looked up again only when the plan changed the definition (an evolved schema).
      const early = await ready;
      const scripts =
        definition === def && early !== null
          ? early
          : await jobScripts(this.codegen, p.environment, definition);
      const target: LoadTarget = {
        ...base,
        destination: definition.destination,
        columns: [
          ...outputFields(fields, definition.transformation.mappings),
          ...scripts.flatMap((s) => s.outputColumns),
        ],
      };
      const transformScript = scripts.find((s) => s.kind === 'transformation');
      const transforms = definition.transformation.mappings.length > 0 || transformScript !== undefined;
      await prepareLegs(legs, target, added, probes);
      const loading = legs.filter((l) => l.error === null);
      if (loading.length === 0) return null;
      const schema =
        readSchema !== null && readSchema.file === definition.dataQuality.validationSchema
          ? readSchema
          : await validationSchemaOf(this.configFiles, p.environment, definition);
      await session
        .plan(
          definition,
          fileColumns,
          schema,
          loading.map((l) => ({
            module: encoderModule(l.destination.encoder),
            maxBatchRows: l.destination.capabilities.maxBatchRows,
            shape: l.shape,
          })),
          scripts.map(({ version: _version, ...spec }) => spec),
        )
        .catch(stageFailure);
      await this.outcome.began(events, definition, loading, scripts, {
        fast,
        transforms,
        whole: p.inline !== undefined,
      });

      let sample: Record<string, unknown>[] = [];
      const fan = new Fanout<Payload>(loading.length);
      let readFailure: StageError | null = null;
      const pump = fan
        .pump(async () => {
          const next = await session.next();
          if ('end' in next) {
            counts = next.end;
            sample = next.sample;
            return null;
          }
          counts = next.counts;
          stage.parts?.track(next.payloads);
          stage.parts?.reuse(next.spent);
          return next.payloads;
        })
        .catch((err: unknown) => {
          // Read errors end every load; each rolls back and the job reports the reason.
          readFailure = stageError(err);
        });
      const rejects = () => stage.rejects(counts.rejected);
      const loads = loading.map(async (leg, i) => {
        const d = leg.destination;
        const progress = this.outcome.progress(events, d.processName, () => ({
          rejected: counts.rejected,
          read: stage.read.bytes,
          size: p.size ?? null,
        }));
        try {
          leg.result = await d.load(target, fan.stream(i), rejects, progress.report);
        } catch (err) {
          leg.error = destinationError(d.processName, err);
        } finally {
          fan.detach(i);
          await progress.written();
        }
      });
      await Promise.all([pump, ...loads]);
      if (readFailure !== null) throw readFailure;
      const landed = loading.find((l) => l.result !== null)?.result;
      if (sample.length > 0 && scripts.length > 0 && landed && session.finished) {
        await recordLanded(this.codegen, p, {
          columns: outputFields(fields, definition.transformation.mappings),
          sample,
          scripts,
          counts,
          loaded: landed.loaded,
          durationMs: Date.now() - started,
        });
      }
      // Every loader failed before the input was read to its end: there are no counts to report.
      return session.finished ? { counts, first, transforms, note } : null;
    } finally {
      session.end();
      await stage.close();
    }
  }

  /**
   * Maps the file's columns onto the schema under the pipeline's schema contract. In every mode a
   * header that is mostly foreign to the schema is refused: that is nearly always a wrong file, or a
   * wrong delimiter or header setting. Then `evolve` adds the file's new columns to the pipeline as
   * `string` (spec rule) and bumps its version; `freeze` refuses any difference; `discard_columns`
   * and `discard_rows` leave the schema alone (the RowPlan ignores the unknown columns, or rejects
   * rows holding a value in one). `note`: what the job's end reports (and why it is a `warning`).
   */
  private async plan(
    p: IngestPayload,
    def: PipelineDefinition,
    first: { header: string[] | null; width: number | null },
  ): Promise<{
    fileColumns: string[];
    definition: PipelineDefinition;
    added: string[];
    note: string | null;
  }> {
    const { fileColumns, evolve, note } = planColumns(def, first);
    if (evolve.length === 0) return { fileColumns, definition: def, added: [], note };
    const definition = (await this.pipelines.addColumns(p.environment, p.pipeline, evolve)).definition;
    this.logger.info(
      { pipeline: p.pipeline, added: evolve.length },
      'added file columns to the pipeline schema',
    );
    return { fileColumns, definition, added: evolve, note };
  }
}
