import { Inject, Injectable } from '@nestjs/common';
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import {
  DESTINATIONS,
  Destination,
  DestinationRegistry,
  LoadTarget,
  RejectedRow,
} from '@tapyard/destinations';
import { ConfigFilesService } from '@tapyard/configfiles';
import { PipelineDefinition, PipelinesService, outputFields } from '@tapyard/pipelines';
import { uniqueNames } from '@tapyard/profiling';
import { DocumentPayload, IngestPayload, RetryLaterError } from '@tapyard/queue';
import { ProcessName, StatusService, jobRef } from '@tapyard/status';
import { Spool } from './spool';
import { StageError, destinationError, pipelineError } from './stage-error';
import { Counts } from './stage-thread/protocol';
import {
  StageSession,
  StageStalledError,
  StageThreadError,
  StageThreadPool,
} from './stage-thread/stage-thread';

/** A failure of the stage thread (the input, the tap stream, the schema, the watchdog), by stage. */
function stageError(err: unknown): StageError {
  if (err instanceof StageError) return err;
  if (err instanceof StageStalledError) return new StageError(err.stage, err.message);
  if (err instanceof StageThreadError) {
    return new StageError('DataQuality', err.message, false, err.failure === 'superseded');
  }
  return new StageError('DataQuality', errorMessage(err));
}

function stageFailure(err: unknown): never {
  throw stageError(err);
}

/**
 * Runs one ingestion job in a worker: read → DataQuality → Transformation (when configured) →
 * JobRunner → destination loader, streaming batch by batch so memory is bounded by the batch size.
 * Every stage writes its own status events. Redelivery after a crash is safe: the loader's
 * exactly-once ledger makes a second delivery of a committed job write nothing.
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
    private readonly configFiles: ConfigFilesService,
    private readonly threads: StageThreadPool,
  ) {}

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
   * `attempt`: which delivery this is. An unreachable destination on a delivery that is not the last
   * throws RetryLaterError (BullMQ runs the job again after a back-off, exactly-once loaders make that
   * safe); on the last one the job ends `error` naming the service.
   */
  async run(p: IngestPayload, attempt: { made: number; max: number } = { made: 0, max: 1 }): Promise<void> {
    const job = jobRef(p);
    let stage: ProcessName = 'JobRunner';
    try {
      const def = (
        await this.pipelines.getForLoading(p.environment, p.pipeline).catch((err: unknown) => {
          throw pipelineError(p.pipeline, err);
        })
      ).definition;
      const destination = this.destinationFor(def);
      const location = describeDestination(def);
      await this.status.record(
        job,
        'JobRunner',
        'begin',
        `loading ${p.filename} into ${destination.name} ${location}`,
      );

      stage = 'DataQuality';
      const rejectsPath = `${p.spoolPath}.rejects`;
      // Reading, DataQuality and Transformation run in a stage thread under a watchdog.
      const session = await this.threads.start(
        {
          spoolPath: p.spoolPath,
          stream: p.records?.stream ?? null,
          records: p.records ? { keys: p.records.keys, columns: p.records.columns } : null,
          definition: def,
          filename: p.filename,
          rejectsPath,
          spinOn: this.config.worker.testSpinOn,
        },
        { stallMs: this.config.worker.stageStallMs, maxIdle: this.config.worker.concurrency },
      );
      let counts: Counts = { rows: 0, rejected: 0, dq: 0, tf: 0, firstReject: null };
      let result;
      let first: { header: string[] | null; width: number | null };
      let transforms: boolean;
      try {
        first = await session.first().catch(stageFailure);
        const { fileColumns, definition } = await this.plan(p, def, first);
        const schema = await this.validationSchema(p.environment, definition);
        await session.plan(definition, fileColumns, schema).catch(stageFailure);
        const fields = definition.source.schemaProperties.fields;
        transforms = definition.transformation.mappings.length > 0;
        const ruleCount = definition.dataQuality.rules.length;
        await this.status.record(
          job,
          'DataQuality',
          'begin',
          `checking types of ${fields.length} columns and ${ruleCount} rule(s)`,
        );
        if (transforms) {
          await this.status.record(
            job,
            'Transformation',
            'begin',
            `${definition.transformation.mappings.length} mapping step(s)`,
          );
        }

        stage = destination.processName;
        const target: LoadTarget = {
          environment: p.environment,
          pipeline: p.pipeline,
          destination: definition.destination,
          columns: outputFields(fields, definition.transformation.mappings),
          pipelineToken: p.pipelineToken,
        };
        await destination.prepare(target).catch((err: unknown) => {
          throw destinationError(destination.processName, err);
        });
        await this.status.record(job, destination.processName, 'begin', `writing into ${location}`);

        let lastProgress = Date.now();
        // Progress entries are written without holding up the load, but in order, and all of them
        // before the stage's `end` entry.
        let progressWritten: Promise<void> = Promise.resolve();
        const progress = (loaded: number) => {
          if (Date.now() - lastProgress < this.config.progressEveryMs) return;
          lastProgress = Date.now();
          const note = `${loaded} rows loaded so far; ${counts.rejected} rejected`;
          progressWritten = progressWritten.then(() =>
            this.status.record(job, destination.processName, 'processing', note).catch(() => undefined),
          );
        };
        let readFailure: Error | null = null;
        const chunks = async function* (s: StageSession): AsyncGenerator<string> {
          try {
            for (;;) {
              const next = await s.next();
              if ('end' in next) {
                counts = next.end;
                return;
              }
              counts = next.counts;
              yield next.text;
            }
          } catch (err) {
            // Read errors end the load; the transaction rolls back and the job reports the reason.
            readFailure = stageError(err);
            throw readFailure;
          }
        };
        try {
          result = await destination.load(target, chunks(session), () => readRejects(rejectsPath), progress);
        } catch (err) {
          throw readFailure ?? destinationError(destination.processName, err);
        } finally {
          await rm(rejectsPath, { force: true });
        }
        await progressWritten;
      } finally {
        session.end();
      }

      const dqNote = result.alreadyLoaded
        ? 'an earlier delivery of this job already loaded it'
        : `${counts.rows} rows checked, ${counts.dq} rejected`;
      await this.status.record(job, 'DataQuality', 'end', dqNote);
      if (transforms)
        await this.status.record(
          job,
          'Transformation',
          'end',
          `${counts.tf} row(s) rejected by the output types`,
        );
      const loadNote = result.alreadyLoaded
        ? `already loaded by an earlier delivery: ${result.loaded} rows in ${result.location}`
        : `loaded ${result.loaded} rows into ${result.location}` +
          (result.rejected > 0
            ? `; ${result.rejected} rejected rows kept in ${result.rejectsLocation ?? `${result.location}_rejects`}`
            : '');
      if (result.loaded === 0 && result.rejected === 0) {
        throw new StageError(
          'DataQuality',
          first.header ? 'the file has a header row but no data rows' : 'the file holds no records',
        );
      }
      await this.status.record(job, destination.processName, 'end', loadNote);
      if (result.loaded === 0) {
        // Nothing usable at all is a failed job, not a warning: the rejects say why.
        throw new StageError(
          'DataQuality',
          `nothing was loaded: all ${result.rejected} record(s) were rejected` +
            (counts.firstReject ? ` (the first: ${counts.firstReject})` : '') +
            (result.alreadyLoaded
              ? ''
              : `; they are kept in ${result.rejectsLocation ?? `${result.location}_rejects`}`),
        );
      }
      const outcome = result.rejected > 0 ? 'warning' : 'success';
      await this.status.record(
        job,
        'JobRunner',
        'end',
        `${outcome}: ${result.loaded} loaded, ${result.rejected} rejected`,
        outcome,
      );
      await this.spool.remove(p.spoolPath);
    } catch (err) {
      if (err instanceof StageError && err.superseded) {
        // Not a failure: the tap run moved its records to another job before this one committed.
        await this.status.record(job, 'JobRunner', 'end', `nothing loaded here: ${err.message}`, 'success');
        await this.spool.remove(p.spoolPath).catch(() => undefined);
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
        throw new RetryLaterError(message);
      }
      this.logger.warn({ pipelineToken: p.pipelineToken, processName, err: message }, 'ingestion job failed');
      await this.status.record(job, processName, 'error', message, 'error');
      await this.spool.remove(p.spoolPath).catch(() => undefined);
    }
  }

  /**
   * A staged document of a document tap, for the pipeline's vector store. Until a vector store is
   * registered as a destination the job ends `error` naming the store; the document stays staged and
   * in the tap's ledger, so clearing the ledger entry re-processes it later.
   */
  async runDocument(p: DocumentPayload): Promise<void> {
    const job = jobRef(p);
    try {
      const def = (
        await this.pipelines.get(p.environment, p.pipeline).catch((err: unknown) => {
          throw pipelineError(p.pipeline, err);
        })
      ).definition;
      await this.status.record(
        job,
        'JobRunner',
        'begin',
        `loading document ${p.uri} from ${p.bucket}/${p.key}`,
      );
      this.destinationFor(def);
      throw new StageError('JobRunner', `no loader takes documents into ${describeDestination(def)} yet`);
    } catch (err) {
      const e = err instanceof StageError ? err : new StageError('JobRunner', errorMessage(err));
      await this.status.record(job, e.processName, 'error', e.message, 'error');
    }
  }

  private destinationFor(def: PipelineDefinition): Destination {
    const db = def.destination.database;
    const name = def.destination.vectorStore
      ? def.destination.vectorStore.store
      : def.destination.objectStore
        ? 'objectstore'
        : db?.usePostgres === false
          ? 'mongodb'
          : 'postgres';
    const d = this.destinations.get(name);
    if (!d) throw new StageError('JobRunner', `destination '${name}' is not available in this release`);
    return d;
  }

  /**
   * Maps the file's columns onto the schema. CSV columns missing from the schema are added to the
   * pipeline as `string` (spec rule); a file sharing no column with a multi-column schema is refused,
   * since that is nearly always a wrong delimiter or header setting.
   */
  private async plan(
    p: IngestPayload,
    def: PipelineDefinition,
    first: { header: string[] | null; width: number | null },
  ): Promise<{ fileColumns: string[]; definition: PipelineDefinition }> {
    const fields = def.source.schemaProperties.fields;
    const fa = def.source.fileAttributes;
    if (fa.format !== 'csv') return { fileColumns: [fields[0]?.name ?? '_json'], definition: def };

    const width = first.header?.length ?? first.width ?? fields.length;
    const fileColumns = first.header
      ? uniqueNames(first.header)
      : Array.from({ length: width }, (_, i) => fields[i]?.name ?? `column_${i + 1}`);
    const known = new Set(fields.map((f) => f.name));
    if (first.header && fields.length > 1 && !fileColumns.some((c) => known.has(c))) {
      throw new StageError(
        'DataQuality',
        `none of the file's columns (${fileColumns.slice(0, 5).join(', ')}) is in the pipeline schema ` +
          `(${fields
            .slice(0, 5)
            .map((f) => f.name)
            .join(', ')}): check the delimiter ('${fa.csvAttributes.delimiter}') and header settings`,
      );
    }
    const missing = fileColumns.filter((c) => !known.has(c));
    let definition = def;
    if (missing.length > 0) {
      definition = (await this.pipelines.addColumns(p.environment, p.pipeline, missing)).definition;
      this.logger.info(
        { pipeline: p.pipeline, added: missing.length },
        'added file columns to the pipeline schema',
      );
    }
    return { fileColumns, definition };
  }
}

function describeDestination(def: PipelineDefinition): string {
  const { database: db, objectStore: os, vectorStore: vs } = def.destination;
  if (vs) return `${vs.store} collection '${vs.collection}'`;
  if (os) return `${os.bucket ?? 'the output bucket'}/${os.prefix} (${os.format})`;
  return db?.usePostgres === false ? `${db.dbName}.${db.table}` : `${db?.dbName}.${db?.schema}.${db?.table}`;
}

async function* readRejects(path: string): AsyncGenerator<RejectedRow> {
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  for await (const line of lines) if (line) yield JSON.parse(line) as RejectedRow;
}
