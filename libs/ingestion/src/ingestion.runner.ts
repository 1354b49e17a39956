import { Inject, Injectable, Optional } from '@nestjs/common';
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel } from 'node:worker_threads';
import { createInterface } from 'node:readline';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import {
  DESTINATIONS,
  DestinationRegistry,
  LoadTarget,
  Payload,
  RejectedRow,
  Sink,
  SinkGate,
  destinationsFor,
  encoderModule,
} from '@tapyard/destinations';
import { ConfigFilesService } from '@tapyard/configfiles';
import { DestinationSections, PipelinesService, outputFields } from '@tapyard/pipelines';
import { PipelineDefinition } from '@tapyard/model';
import { DeferLaterError, IngestPayload, RetryLaterError } from '@tapyard/queue';
import { ProcessName, StatusService, jobRef } from '@tapyard/status';
import { Spool } from '@tapyard/intake';
import { STAGE_SPIN_ON } from './stage-spin';
import { Staging } from '@tapyard/intake';
import { StageError, destinationError, pipelineError } from './stage-error';
import { planColumns } from './schema-plan';
import { JobOutcome, Leg } from './job-outcome';
import { Counts } from './stage-thread/protocol';
import { newCounts } from './stage-thread/convert';
import { StageStalledError, StageThreadError, StageThreadPool } from './stage-thread/stage-thread';
import { sendInput } from './stage-thread/input-channel';
import { Fanout } from './fanout';
import { fastPathBlocker } from '@tapyard/readers';
import { CODEGEN_KINDS, ScriptRunSpec } from '@tapyard/scripts';
import { CodegenService, instructionOf } from '@tapyard/codegen';

/** How long a job's end waits for the read of its input to stop. */
const READ_STOP_WAIT_MS = 5000;

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
   * The pipeline's CodeGen scripts for this job, in stage order; a kind whose instruction has no script
   * to run (none written yet, no provider) fails its stage, saying why: rows are never loaded unchecked.
   */
  private async scripts(
    environment: string,
    def: PipelineDefinition,
  ): Promise<(ScriptRunSpec & { version: number | null })[]> {
    const out: (ScriptRunSpec & { version: number | null })[] = [];
    for (const kind of CODEGEN_KINDS) {
      const stage = kind === 'dataQuality' ? 'DataQuality' : 'Transformation';
      try {
        const live = await this.codegen.forRun(environment, def, kind);
        if (live === null) continue;
        out.push({
          ...(await this.codegen.runSpec(kind, live.script, live.outputColumns)),
          version: live.version,
        });
      } catch (err) {
        throw new StageError(stage, errorMessage(err));
      }
    }
    return out;
  }

  /** The text of the pipeline's validation schema, for the stage thread to compile; a missing one fails the job. */
  private async validationSchema(
    environment: string,
    def: PipelineDefinition,
  ): Promise<{ file: string; text: string } | null> {
    const file = def.dataQuality.validationSchema;
    if (!file) return null;
    try {
      return { file, text: await this.configFiles.readValidationSchema(environment, file) };
    } catch (err) {
      throw new StageError('DataQuality', errorMessage(err));
    }
  }

  /**
   * `attempt`: which delivery this is. A destination that was unreachable, on a delivery that is not
   * the last, makes the job run again after a back-off (RetryLaterError), where only the destinations
   * that did not commit load; on the last one it ends `error` naming the service, and the job
   * `warning` when another destination loaded.
   */
  async run(p: IngestPayload, attempt: { made: number; max: number } = { made: 0, max: 1 }): Promise<void> {
    const job = jobRef(p);
    let stage: ProcessName = 'JobRunner';
    let leaveGate: (() => void) | null = null;
    try {
      const { definition: def, loadId } = await this.pipelines
        .getForLoading(p.environment, p.pipeline)
        .catch((err: unknown) => {
          throw pipelineError(p.pipeline, err);
        });
      const legs: Leg[] = destinationsFor(this.destinations, def.destination).map((destination) => ({
        destination,
        result: null,
        error: null,
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
          if (!p.deferrals) await this.status.record(job, 'JobRunner', 'processing', message);
          throw new DeferLaterError(message, SINK_DEFER_MS + Math.floor(Math.random() * SINK_DEFER_MS));
        }
      }
      await this.status.record(
        job,
        'JobRunner',
        'begin',
        `loading ${p.filename} into ${legs.map((l) => `${l.destination.name} ${l.destination.describe(def.destination)}`).join(', ')}`,
      );
      const base: LoadTarget = {
        environment: p.environment,
        pipeline: p.pipeline,
        destination: def.destination,
        columns: [],
        pipelineToken: p.pipelineToken,
        publisherToken: p.publisherToken,
        loadId,
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
        const read = await this.load(p, def, loadId, pending);
        if (read !== null) ({ counts, first, transforms, note } = read);
      }

      if (counts !== null) {
        await this.status.record(
          job,
          'DataQuality',
          'end',
          `${counts.rows} rows checked, ${counts.dq} rejected` +
            (counts.unparsed > 0
              ? `; ${counts.unparsed} of them went to the destination unparsed (fast path)`
              : ''),
        );
        if (transforms) {
          await this.status.record(
            job,
            'Transformation',
            'end',
            `${counts.tf} row(s) rejected by the output types`,
          );
        }
        if (counts.rows === 0) {
          throw new StageError(
            'DataQuality',
            first.header ? 'the file has a header row but no data rows' : 'the file holds no records',
          );
        }
      } else if (legs.every((l) => l.result !== null)) {
        await this.status.record(
          job,
          'DataQuality',
          'end',
          'an earlier delivery of this job already loaded it',
        );
      }
      await this.outcome.finish(job, legs, counts, note, attempt);
      await this.release(p, 'ended');
    } catch (err) {
      if (err instanceof RetryLaterError || err instanceof DeferLaterError) {
        // Another worker may take the next delivery: it copies the staged input again.
        await this.release(p, 'again');
        throw err;
      }
      if (err instanceof StageError && err.superseded) {
        // Not a failure: the tap run moved its records to another job before this one committed.
        await this.status.record(job, 'JobRunner', 'end', `nothing loaded here: ${err.message}`, 'success');
        await this.release(p, 'again');
        return;
      }
      const processName = err instanceof StageError ? err.processName : stage;
      const message = errorMessage(err);
      if (err instanceof StageError && err.retryable && attempt.made + 1 < attempt.max) {
        await this.status.record(
          job,
          processName,
          'processing',
          `${message}; will retry (delivery ${attempt.made + 1} of ${attempt.max})`,
        );
        await this.release(p, 'again');
        throw new RetryLaterError(message);
      }
      this.logger.warn({ pipelineToken: p.pipelineToken, processName, err: message }, 'ingestion job failed');
      await this.status.record(job, processName, 'error', message, 'error');
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
    if (how === 'ended') await this.staging.remove(p.environment, p.staged).catch(() => undefined);
  }

  /**
   * Reads the job's input once in a stage thread and loads it into every pending destination side
   * by side. A failure of one destination is kept on its leg (the others go on); a failure of the
   * input ends them all and is thrown.
   */
  private async load(
    p: IngestPayload,
    def: PipelineDefinition,
    loadId: boolean,
    legs: Leg[],
  ): Promise<{
    counts: Counts;
    first: { header: string[] | null; width: number | null };
    transforms: boolean;
    note: string | null;
  } | null> {
    const job = jobRef(p);
    const started = Date.now();
    // The runner reads the staged input as it arrives and hands it to the stage thread as it goes.
    const rejectsPath = `${await this.spool.reserve(p.environment, p.pipelineToken)}.rejects`;
    const reading = new AbortController();
    const { port1, port2 } = new MessageChannel();
    const read = { bytes: 0 };
    const sending = sendInput(
      counted(
        this.staging.read(p.environment, p.staged, {
          reader: p.pipelineToken,
          signal: reading.signal,
          staleMs: (p.stream ?? p.records?.stream)?.staleMs,
        }),
        read,
      ),
      port1,
      reading.signal,
    );
    // Reading, DataQuality and Transformation run in a stage thread under a watchdog.
    const fast = this.fastPath(p, def, legs);
    // A request to the store that hangs must not hold the job's end.
    const stopReading = async () => {
      reading.abort();
      await Promise.race([sending, sleep(READ_STOP_WAIT_MS, undefined, { ref: false })]);
    };
    const session = await this.threads
      .start(
        {
          input: port2,
          records: p.records ? { keys: p.records.keys, columns: p.records.columns } : null,
          definition: def,
          filename: p.filename,
          rejectsPath,
          spinOn: this.spinOn,
          fast,
        },
        { stallMs: this.config.worker.stageStallMs, maxIdle: this.config.worker.concurrency },
      )
      .catch(async (err: unknown) => {
        await stopReading();
        throw err;
      });
    let counts: Counts = newCounts();
    try {
      const first = await session.first().catch(stageFailure);
      const { fileColumns, definition, added, note } = await this.plan(p, def, first);
      const fields = definition.source.schemaProperties.fields;
      const scripts = await this.scripts(p.environment, definition);
      const target: LoadTarget = {
        environment: p.environment,
        pipeline: p.pipeline,
        destination: definition.destination,
        columns: [
          ...outputFields(fields, definition.transformation.mappings),
          ...scripts.flatMap((s) => s.outputColumns),
        ],
        pipelineToken: p.pipelineToken,
        publisherToken: p.publisherToken,
        loadId,
      };
      const transformScript = scripts.find((s) => s.kind === 'transformation');
      const checkScript = scripts.find((s) => s.kind === 'dataQuality');
      const transforms = definition.transformation.mappings.length > 0 || transformScript !== undefined;
      // Each destination prepares its target; one that cannot is out of this delivery, the others load.
      // probe() first: an unreachable one fails at once, as an outage, rather than after a connect timeout
      // inside its preparations.
      for (const leg of legs) {
        const d = leg.destination;
        const down = await d.probe(target).then(
          () => null,
          (err: unknown) => err,
        );
        if (down !== null) {
          leg.error = destinationError(d.processName, down);
          continue;
        }
        if (added.length > 0 && !d.capabilities.schemaEvolution) {
          leg.error = new StageError(
            d.processName,
            `${d.name} cannot take new columns (${added.slice(0, 5).join(', ')}): it does not evolve its schema`,
          );
          continue;
        }
        await d.prepare(target).catch((err: unknown) => {
          leg.error = destinationError(d.processName, err);
        });
      }
      const loading = legs.filter((l) => l.error === null);
      if (loading.length === 0) return null;
      const schema = await this.validationSchema(p.environment, definition);
      await session
        .plan(
          definition,
          fileColumns,
          schema,
          loading.map((l) => ({
            module: encoderModule(l.destination.encoder),
            maxBatchRows: l.destination.capabilities.maxBatchRows,
          })),
          scripts.map(({ version: _version, ...spec }) => spec),
        )
        .catch(stageFailure);
      await this.status.record(
        job,
        'DataQuality',
        'begin',
        `checking types of ${fields.length} columns and ${definition.dataQuality.rules.length} rule(s)` +
          (checkScript
            ? `, then the data-quality script (version ${checkScript.version ?? 'unnumbered'})`
            : '') +
          (fast ? '; clean CSV chunks go to the destination unparsed' : ''),
      );
      if (transforms) {
        await this.status.record(
          job,
          'Transformation',
          'begin',
          `${definition.transformation.mappings.length} mapping step(s)` +
            (transformScript
              ? `, then the transformation script (version ${transformScript.version ?? 'unnumbered'})`
              : ''),
        );
      }
      for (const leg of loading) {
        await this.status.record(
          job,
          leg.destination.processName,
          'begin',
          `writing into ${leg.destination.describe(definition.destination)}`,
        );
      }

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
          return next.payloads;
        })
        .catch((err: unknown) => {
          // Read errors end every load; each rolls back and the job reports the reason.
          readFailure = stageError(err);
        });
      const loads = loading.map(async (leg, i) => {
        const d = leg.destination;
        const progress = this.outcome.progress(job, d.processName, () => ({
          rejected: counts.rejected,
          read: read.bytes,
          size: p.size ?? null,
        }));
        try {
          leg.result = await d.load(target, fan.stream(i), () => readRejects(rejectsPath), progress.report);
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
        // What the next CodeGen script is dry-run on and its evidence computed from (kept only for
        // pipelines with scripts: it is data); losing it only means a synthetic sample.
        const final = counts;
        await this.codegen
          .saveSample(
            p.environment,
            p.pipeline,
            outputFields(fields, definition.transformation.mappings),
            sample,
          )
          .then(() =>
            this.codegen.jobLanded({
              environment: p.environment,
              pipeline: p.pipeline,
              pipelineToken: p.pipelineToken,
              versions: scripts.map((s) => ({ kind: s.kind, version: s.version })),
              rows: final.rows,
              loaded: landed.loaded,
              dqFailures: final.dq,
              durationMs: Date.now() - started,
            }),
          )
          .catch(() => undefined);
      }
      // Every loader failed before the input was read to its end: there are no counts to report.
      return session.finished ? { counts, first, transforms, note } : null;
    } finally {
      session.end();
      await stopReading();
      await rm(rejectsPath, { force: true });
    }
  }

  /**
   * Whether the job reads its file on the fast path (stage-thread/fast-csv.ts): a CSV upload with a
   * header, the default null handling and utf-8, no rules or mappings (they need every value), and
   * one destination that takes clean CSV as it is.
   */
  private fastPath(p: IngestPayload, def: PipelineDefinition, legs: Leg[]): boolean {
    const fa = def.source.fileAttributes;
    return (
      this.config.worker.csvFastPath &&
      this.spinOn === null &&
      fa.format === 'csv' &&
      p.records === undefined &&
      fa.csvAttributes.header &&
      fastPathBlocker(fa.csvAttributes) === null &&
      def.dataQuality.rules.length === 0 &&
      def.transformation.mappings.length === 0 &&
      CODEGEN_KINDS.every((k) => instructionOf(def, k) === null) &&
      legs.length === 1 &&
      legs[0].destination.capabilities.csvPassThrough
    );
  }

  /**
   * Writes each destination's outcome and the job's: `success` (or `warning` with rejects, or with a
   * schema contract `note`) when every destination loaded, `warning` when some did, `error` when none
   * did. A destination that was unreachable and is exactly-once makes the job run again while
   * deliveries remain.
   */

  /**
   * `processing` entries with the rows so far and the input's bytes read (of how many, and the
   * percentage, when the size is known): at most every progressEveryMs, in order, all written before
   * the stage ends.
   */

  /**
   * Maps the file's columns onto the schema under the pipeline's schema contract. In every mode a
   * header that is mostly foreign to the schema is refused: that is nearly always a wrong file, or a
   * wrong delimiter or header setting. Then `evolve` adds the file's new columns to the pipeline as
   * `string` (spec rule) and bumps its version; `freeze` refuses any difference; `discard_columns`
   * and `discard_rows` leave the schema alone (the RowPlan ignores the unknown columns, or rejects
   * rows holding a value in one). `note`: what the job's end reports (and why it is a `warning`).
   */
  /** The file's columns against the schema (planColumns); `evolve` adds the new ones to the pipeline. */
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

/** The input as it is handed to the stage thread, its bytes counted into `read`. */
async function* counted(source: AsyncIterable<Buffer>, read: { bytes: number }): AsyncGenerator<Buffer> {
  for await (const part of source) {
    read.bytes += part.length;
    yield part;
  }
}

async function* readRejects(path: string): AsyncGenerator<RejectedRow> {
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  for await (const line of lines) if (line) yield JSON.parse(line) as RejectedRow;
}
