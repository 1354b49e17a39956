import { Inject, Injectable } from '@nestjs/common';
import { createReadStream, createWriteStream, WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { Logger } from 'pino';
import {
  CONFIG,
  LOGGER,
  ServiceUnavailableError,
  TapyardConfig,
  errorMessage,
  safeText,
} from '@tapyard/core';
import {
  DESTINATIONS,
  Destination,
  DestinationRegistry,
  LoadTarget,
  RejectedRow,
} from '@tapyard/destinations';
import { ConfigFilesService, compileJsonSchema } from '@tapyard/configfiles';
import { XsdRecordValidator } from '@tapyard/schemas';
import { PipelineDefinition, PipelinesService } from '@tapyard/pipelines';
import { uniqueNames } from '@tapyard/profiling';
import { DocumentPayload, IngestPayload, RetryLaterError } from '@tapyard/queue';
import { ProcessName, StatusService, jobRef } from '@tapyard/status';
import { FatalReadError, RecordBatch } from './readers/record-batch';
import { readCsv } from './readers/csv-reader';
import { readJson } from './readers/json-reader';
import { readXml } from './readers/xml-reader';
import { readTapRecords } from './readers/tap-records';
import { StreamEndedError, tailFile } from './readers/tail-file';
import { RowPlan } from './row-plan';
import { Spool } from './spool';

/** A failure attributed to the stage where it happened, for the job's `lastError`. */
class StageError extends Error {
  constructor(
    readonly processName: ProcessName,
    message: string,
    /** The destination was unreachable: worth running again later. */
    readonly retryable = false,
  ) {
    super(message);
  }
}

function destinationError(processName: ProcessName, err: unknown): StageError {
  return new StageError(processName, errorMessage(err), err instanceof ServiceUnavailableError);
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
  ) {}

  /**
   * The pipeline's validation schema as a batch check, or null: a JSON Schema (`.json`) for JSON and XML
   * records, an XSD (`.xsd`) for XML records. A missing or unusable schema fails the job.
   */
  private async recordValidator(
    environment: string,
    def: PipelineDefinition,
  ): Promise<RecordValidator | null> {
    const file = def.dataQuality.validationSchema;
    if (!file) return null;
    const prefix = `record does not match validation schema '${file}'`;
    try {
      const text = await this.configFiles.readValidationSchema(environment, file);
      if (file.endsWith('.xsd')) {
        const xsd = XsdRecordValidator.create(
          text,
          def.source.fileAttributes.xmlAttributes?.rowElement ?? 'row',
        );
        return async (records) => {
          const parsed = records.map(parseRecord);
          const objects = parsed.filter((r): r is Record<string, unknown> => typeof r !== 'string');
          const reasons = await xsd.check(objects).catch((err: unknown) => {
            throw new StageError('DataQuality', errorMessage(err));
          });
          let k = 0;
          return parsed.map((r) =>
            typeof r === 'string' ? r : reasons[k++] && `${prefix}: ${reasons[k - 1]}`,
          );
        };
      }
      const check = compileJsonSchema(text, file);
      return async (records) =>
        records.map((json) => {
          const record = parseRecord(json);
          if (typeof record === 'string') return record;
          if (check(record)) return null;
          const e = check.errors?.[0];
          return `${prefix}: ${e ? `${e.instancePath || '/'} ${e.message ?? 'is invalid'}` : 'invalid'}`;
        });
    } catch (err) {
      throw err instanceof StageError ? err : new StageError('DataQuality', errorMessage(err));
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
        await this.pipelines.get(p.environment, p.pipeline).catch(() => {
          throw new StageError('JobRunner', `pipeline '${p.pipeline}' no longer exists`);
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
      const input = p.records?.stream
        ? Readable.from(tailFile(p.spoolPath, p.records.stream.staleMs))
        : this.spool.open(p.spoolPath);
      const batches = this.read(def, input, p.records, p.filename);
      const first = await batches.next();
      const firstBatch: RecordBatch = first.done ? { rows: [], lines: [], errors: [] } : first.value;
      const { plan, definition } = await this.plan(p, def, firstBatch);

      const validate = await this.recordValidator(p.environment, definition);
      const ruleCount = definition.dataQuality.rules.length;
      await this.status.record(
        job,
        'DataQuality',
        'begin',
        `checking types of ${definition.source.schemaProperties.fields.length} columns and ${ruleCount} rule(s)`,
      );
      if (plan.transforms) {
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
        destination: definition.destination,
        columns: plan.outColumns,
        pipelineToken: p.pipelineToken,
      };
      await destination.prepare(target).catch((err: unknown) => {
        throw destinationError(destination.processName, err);
      });
      await this.status.record(job, destination.processName, 'begin', `writing into ${location}`);

      const rejectsPath = `${p.spoolPath}.rejects`;
      const rejects = createWriteStream(rejectsPath);
      const counts: Counts = { rows: 0, rejected: 0, dq: 0, tf: 0, firstReject: null };
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
      let readFailure: StageError | null = null;
      // Set inside the reader below; a holder, since TypeScript does not track closures' writes.
      const ended: { superseded: StreamEndedError | null } = { superseded: null };
      const chunks = async function* (this: IngestionRunner): AsyncGenerator<string> {
        try {
          yield convert(firstBatch, plan, counts, rejects, await checked(firstBatch, validate));
          for await (const batch of { [Symbol.asyncIterator]: () => batches })
            yield convert(batch, plan, counts, rejects, await checked(batch, validate));
        } catch (err) {
          if (err instanceof StreamEndedError && err.superseded) {
            ended.superseded = err;
            throw err;
          }
          // Read errors end the load; the transaction rolls back and the job reports the reason.
          readFailure = new StageError(
            'DataQuality',
            err instanceof FatalReadError ? err.message : errorMessage(err),
          );
          throw readFailure;
        } finally {
          await closeStream(rejects);
        }
      }.call(this);

      let result;
      try {
        result = await destination.load(target, chunks, () => readRejects(rejectsPath), progress);
      } catch (err) {
        if (ended.superseded) throw ended.superseded;
        throw readFailure ?? destinationError(destination.processName, err);
      } finally {
        await rm(rejectsPath, { force: true });
      }

      await progressWritten;
      const dqNote = result.alreadyLoaded
        ? 'an earlier delivery of this job already loaded it'
        : `${counts.rows} rows checked, ${counts.dq} rejected`;
      await this.status.record(job, 'DataQuality', 'end', dqNote);
      if (plan.transforms)
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
            ? `; ${result.rejected} rejected rows kept in ${result.location}_rejects`
            : '');
      if (result.loaded === 0 && result.rejected === 0) {
        throw new StageError(
          'DataQuality',
          firstBatch.header ? 'the file has a header row but no data rows' : 'the file holds no records',
        );
      }
      await this.status.record(job, destination.processName, 'end', loadNote);
      if (result.loaded === 0) {
        // Nothing usable at all is a failed job, not a warning: the rejects say why.
        throw new StageError(
          'DataQuality',
          `nothing was loaded: all ${result.rejected} record(s) were rejected` +
            (counts.firstReject ? ` (the first: ${counts.firstReject})` : '') +
            (result.alreadyLoaded ? '' : `; they are kept in ${result.location}_rejects`),
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
      if (err instanceof StreamEndedError && err.superseded) {
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
        await this.pipelines.get(p.environment, p.pipeline).catch(() => {
          throw new StageError('JobRunner', `pipeline '${p.pipeline}' no longer exists`);
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

  private read(
    def: PipelineDefinition,
    input: Readable,
    records: IngestPayload['records'],
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
        throw new StageError('JobRunner', `format '${fa.format}' cannot be loaded by an ingestion job`);
    }
  }

  /**
   * Maps the file's columns onto the schema. CSV columns missing from the schema are added to the
   * pipeline as `string` (spec rule); a file sharing no column with a multi-column schema is refused,
   * since that is nearly always a wrong delimiter or header setting.
   */
  private async plan(
    p: IngestPayload,
    def: PipelineDefinition,
    first: RecordBatch,
  ): Promise<{ plan: RowPlan; definition: PipelineDefinition }> {
    const fields = def.source.schemaProperties.fields;
    const fa = def.source.fileAttributes;
    if (fa.format !== 'csv') return { plan: new RowPlan(def, [fields[0]?.name ?? '_json']), definition: def };

    const width = first.header?.length ?? first.rows[0]?.length ?? fields.length;
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
    return { plan: new RowPlan(definition, fileColumns), definition };
  }
}

function describeDestination(def: PipelineDefinition): string {
  const { database: db, objectStore: os, vectorStore: vs } = def.destination;
  if (vs) return `${vs.store} collection '${vs.collection}'`;
  if (os) return `${os.bucket ?? 'the output bucket'}/${os.prefix} (${os.format})`;
  return db?.usePostgres === false ? `${db.dbName}.${db.table}` : `${db?.dbName}.${db?.schema}.${db?.table}`;
}

/** Checks one record's JSON text; returns the reason it fails, or null. */
type RecordValidator = (recordJsons: string[]) => Promise<(string | null)[]>;

/** A batch's validation reasons (one per row, null: valid), or null when there is no schema. */
async function checked(
  batch: RecordBatch,
  validate: RecordValidator | null,
): Promise<(string | null)[] | null> {
  return validate ? validate(batch.rows.map((r) => r[0] ?? '')) : null;
}

/** A record's object, or why it is not one. */
function parseRecord(json: string): Record<string, unknown> | string {
  try {
    const v = JSON.parse(json) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : 'record is not a JSON object';
  } catch {
    return 'record is not valid JSON';
  }
}

interface Counts {
  rows: number;
  rejected: number;
  dq: number;
  tf: number;
  /** `line N: reason` of the first rejected row, for the job's error when nothing loads. */
  firstReject: string | null;
}

const JSON_LINES_FILE = /\.(jsonl|ndjson)$/i;

function convert(
  batch: RecordBatch,
  plan: RowPlan,
  counts: Counts,
  rejects: WriteStream,
  reasons: (string | null)[] | null,
): string {
  let out = '';
  for (const e of batch.errors) {
    counts.firstReject ??= `line ${e.line}: ${e.reason}`;
    counts.rejected++;
    counts.dq++;
    rejects.write(
      JSON.stringify({
        line: e.line,
        stage: 'DataQuality',
        reason: safeText(e.reason),
        raw: safeText(e.raw),
      }) + '\n',
    );
  }
  for (let i = 0; i < batch.rows.length; i++) {
    counts.rows++;
    const invalid = reasons ? reasons[i] : null;
    const r =
      invalid === null ? plan.process(batch.rows[i]) : { stage: 'DataQuality' as const, reason: invalid };
    if (typeof r === 'string') out += r;
    else {
      counts.firstReject ??= `line ${batch.lines[i]}: ${r.reason}`;
      counts.rejected++;
      if (r.stage === 'DataQuality') counts.dq++;
      else counts.tf++;
      const raw = batch.rows[i].join(',');
      rejects.write(
        JSON.stringify({
          line: batch.lines[i],
          stage: r.stage,
          reason: safeText(r.reason),
          raw: safeText(raw.length > 1000 ? raw.slice(0, 1000) : raw),
        }) + '\n',
      );
    }
  }
  counts.rows += batch.errors.length;
  return out;
}

async function* readRejects(path: string): AsyncGenerator<RejectedRow> {
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  for await (const line of lines) if (line) yield JSON.parse(line) as RejectedRow;
}

function closeStream(s: WriteStream): Promise<void> {
  return new Promise((resolve) => (s.closed ? resolve() : s.end(() => resolve())));
}
