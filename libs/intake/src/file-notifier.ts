import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, readdir, rm, stat } from 'node:fs/promises';
import { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { ArchiveRefusedError, archiveKind, extractArchive } from '@tapyard/archives';
import { CONFIG, LOGGER, TapyardConfig, errorMessage, isConnectionFailure } from '@tapyard/core';
import { ObjectStore } from '@tapyard/objectstore';
import { PipelineDefinition, isDocumentPipeline } from '@tapyard/model';
import { PipelinesService } from '@tapyard/pipelines';
import {
  EnvironmentQueues,
  INLINE_UPLOAD_BYTES,
  IngestJob,
  IntakePayload,
  loadJobOptions,
} from '@tapyard/queue';
import { JobRef, StatusService, jobRef } from '@tapyard/status';
import { Spool } from './spool';
import { Staging } from './staging';

/** Key prefix of archives staged by uploads; the raw-bucket poller leaves it alone. */
export const STAGED_PREFIX = '_uploads/';

/**
 * The members of an archive a pipeline loads, by name. A CSV pipeline takes `.csv` and `.tsv` only:
 * a `.txt` beside the data is nearly always a README or a licence, not rows.
 */
const READABLE: Record<string, RegExp> = {
  csv: /\.(csv|tsv)$/i,
  json: /\.(json|ndjson|jsonl)$/i,
  xml: /\.xml$/i,
  unstructured: /\.(pdf|docx|html?|xhtml|md|markdown|txt|text)$/i,
};

/**
 * FileNotifier: turns objects of an environment's raw bucket into ingestion jobs. An archive (staged
 * by an upload, or dropped) is extracted safely and each file it holds becomes its own job; a plain
 * file dropped under `<pipeline>/` becomes one job. Every object is taken exactly once, however many
 * workers poll: a row in `tapyard.raw_objects` is claimed first.
 */
@Injectable()
export class FileNotifier {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @InjectDataSource() private readonly db: DataSource,
    private readonly store: ObjectStore,
    private readonly spool: Spool,
    private readonly staging: Staging,
    private readonly status: StatusService,
    private readonly pipelines: PipelinesService,
    private readonly queues: EnvironmentQueues,
  ) {}

  /** Queues an intake job for each new object dropped under `<pipeline>/` in the raw bucket. */
  async poll(environment: string): Promise<number> {
    const bucket = await this.store.bucket(environment, 'raw');
    let queued = 0;
    for (const o of await this.store.list(bucket)) {
      const slash = o.key.indexOf('/');
      if (o.key.startsWith(STAGED_PREFIX) || slash <= 0 || o.key.endsWith('/')) continue;
      const token = randomUUID();
      if (!(await this.claim(environment, o.key, o.etag, token))) continue;
      const payload: IntakePayload = {
        environment,
        pipeline: o.key.slice(0, slash),
        pipelineToken: token,
        publisherToken: null,
        filename: o.key.slice(o.key.lastIndexOf('/') + 1),
        bucket,
        key: o.key,
        staged: false,
      };
      await this.status.record(jobRef(payload), 'FileNotifier', 'begin', `found ${o.key} in ${bucket}`);
      await this.queues.ingest(environment).enqueue(IngestJob.intake, payload, jobOptions(payload));
      queued++;
    }
    return queued;
  }

  /**
   * Worker: fetches the object and queues its load job(s), each file staged for whichever worker
   * takes its job. Failures end the intake job as `error`; an uploaded archive goes either way.
   */
  async intake(p: IntakePayload): Promise<void> {
    const job = jobRef(p);
    const work = this.spool.pathFor(p.environment, `${p.pipelineToken}.intake`);
    try {
      const def = (
        await this.pipelines.get(p.environment, p.pipeline).catch((err: unknown) => {
          // An outage is reported as one, never as a missing pipeline.
          throw isConnectionFailure(err)
            ? new Error(`postgres (the metadata database) is unavailable: ${errorMessage(err)}`)
            : err;
        })
      ).definition;
      const kind = archiveKind(p.filename);
      if (kind === null && !p.staged) {
        // A plain dropped file: this intake job becomes its load job (same token), reading a staged copy.
        await this.staging.write(p.environment, p.pipelineToken, await this.store.get(p.bucket, p.key));
        await this.status.record(job, 'FileNotifier', 'end', `fetched ${p.key}; queued for processing`);
        await this.queueLoad(def, { ...job }, `s3://${p.bucket}/${p.key}`);
        return;
      }
      await mkdir(work, { recursive: true, mode: 0o700 });
      const local = `${work}/object`;
      if (p.staged) await this.staging.download(p.environment, p.pipelineToken, local);
      else await this.store.download(p.bucket, p.key, local);
      if (kind === null) throw new ArchiveRefusedError(`'${p.filename}' is not an archive`);
      const reads = READABLE[isDocumentPipeline(def) ? 'unstructured' : def.source.fileAttributes.format];
      const { files, skipped } = await extractArchive(local, kind, await this.freshDir(`${work}/x`), {
        archiveName: p.filename,
        accept: (name) => reads?.test(name) ?? false,
      });
      await rm(local, { force: true });
      if (files.length === 0) {
        throw new ArchiveRefusedError(
          `archive '${p.filename}' holds no file this ${def.source.fileAttributes.format} pipeline reads` +
            (skipped.length > 0 ? ` (skipped: ${summary(skipped.map((s) => s.name))})` : ''),
        );
      }
      for (const f of files) await this.queueContained(p, def, f.name, f.path);
      const note =
        `extracted ${files.length} file(s) from ${p.filename} as ${files.length} job(s)` +
        (skipped.length > 0
          ? `; skipped ${skipped.length}: ${summary(skipped.map((s) => `${s.name} (${s.reason})`))}`
          : '');
      await this.status.record(job, 'FileNotifier', 'end', note, skipped.length > 0 ? 'warning' : 'success');
    } catch (err) {
      const message = errorMessage(err);
      this.logger.warn({ pipelineToken: p.pipelineToken, key: p.key, err: message }, 'intake failed');
      await this.status.record(job, 'FileNotifier', 'error', message, 'error');
    } finally {
      await rm(work, { recursive: true, force: true });
      if (p.staged) await this.staging.remove(p.environment, p.pipelineToken).catch(() => undefined);
    }
  }

  private async queueContained(
    p: IntakePayload,
    def: PipelineDefinition,
    name: string,
    path: string,
  ): Promise<void> {
    const token = randomUUID();
    const child: JobRef = {
      environment: p.environment,
      pipeline: def.name,
      pipelineToken: token,
      // Jobs of one archive share a publisher token: the caller's, or the archive's own.
      publisherToken: p.publisherToken ?? p.pipelineToken,
      filename: name.slice(0, 255),
    };
    // A small entry travels in its job, as a small upload does: staging it cost two PUTs here and, for
    // its job, two GETs, a list and a delete, which the store's and the worker's CPU paid per entry.
    const small = (await stat(path)).size <= INLINE_UPLOAD_BYTES;
    const inline = small ? await readFile(path) : undefined;
    if (!inline) await this.staging.write(p.environment, token, createReadStream(path));
    await rm(path, { force: true });
    await this.status.recordAll(child, [
      this.status.event('FileNotifier', 'begin', `extracted ${name} from ${p.filename}`),
      this.status.event('FileNotifier', 'end', 'queued for processing'),
    ]);
    // An entry's identity: where the archive came from, then its path inside it.
    const origin = p.staged ? `upload://${p.filename}` : `s3://${p.bucket}/${p.key}`;
    await this.queueLoad(def, child, `${origin}#${name}`, inline);
  }

  /**
   * A document pipeline's file is a document job (one per document, spec); others a load job. Its
   * input is staged under its token, or carried in the job when `inline` is given.
   */
  private async queueLoad(def: PipelineDefinition, job: JobRef, uri: string, inline?: Buffer): Promise<void> {
    const options = loadJobOptions(job.environment, job.pipelineToken, this.config.loadRetry);
    const queue = this.queues.ingest(job.environment);
    const staged = job.pipelineToken;
    if (isDocumentPipeline(def)) {
      const input = inline ? { inline: inline.toString('base64') } : { staged };
      await queue.enqueue(IngestJob.document, { ...job, ...input, uri }, options);
    } else {
      const input = inline ? { inline: inline.toString('base64'), size: inline.length } : {};
      await queue.enqueue(IngestJob.load, { ...job, staged, ...input }, options);
    }
  }

  private async claim(environment: string, key: string, etag: string, token: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `INSERT INTO tapyard.raw_objects (environment, object_key, etag, pipeline_token) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING RETURNING 1`,
      [environment, key, etag, token],
    );
    return rows.length > 0;
  }

  private async freshDir(path: string): Promise<string> {
    await mkdir(path, { recursive: true, mode: 0o700 });
    if ((await readdir(path)).length > 0) throw new Error(`work directory ${path} is not empty`);
    return path;
  }
}

export function jobOptions(p: IntakePayload) {
  // Not the load's id: a dropped file's load job reuses the intake token, and BullMQ ignores a duplicate id.
  return { jobId: `${p.environment}.${p.pipelineToken}.intake`, removeOnComplete: 1000, removeOnFail: 5000 };
}

function summary(items: string[]): string {
  return items.length <= 5
    ? items.join(', ')
    : `${items.slice(0, 5).join(', ')} and ${items.length - 5} more`;
}
