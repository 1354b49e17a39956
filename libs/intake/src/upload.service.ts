import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Request } from 'express';
import type { Logger } from 'pino';
import {
  CONFIG,
  LOGGER,
  TapyardConfig,
  ServiceUnavailableError,
  UnsupportedMediaTypeError,
  ValidationError,
  errorMessage,
} from '@tapyard/core';
import type { AccessCheck } from '@tapyard/auth';
import { PipelineDeletingError, PipelinePolicy, PipelinesService } from '@tapyard/pipelines';
import { isDocumentPipeline } from '@tapyard/model';
import { sniffContent } from '@tapyard/profiling';
import {
  EnvironmentQueues,
  INLINE_UPLOAD_BYTES,
  IngestJob,
  IntakeEntry,
  IntakePayload,
  loadJobOptions,
} from '@tapyard/queue';
import { archiveKind } from '@tapyard/archives';
import { ObjectStore } from '@tapyard/objectstore';
import { JobRef, RecordedEvent, StatusService } from '@tapyard/status';
import { StagedWriter } from './staged-writer';
import { STAGING_PREFIX } from './staging-keys';
import { Staging } from './staging';
import { jobOptions } from './file-notifier';
import { UploadErrorCode } from './upload-errors';
import {
  COMPRESSED,
  HeadCollector,
  Received,
  assertDataFile,
  checkReceived,
  publisherTokenOf,
  receiveUpload,
} from './upload-receipt';

/**
 * How long a streamed upload may stop growing before its job gives up on it. Only a vanished API
 * process leaves a stream without an end: a client that goes away ends the request, and the API
 * then tells the job at once.
 */
const UPLOAD_STALE_MS = 300_000;
/**
 * StreamNotifier: streams a multipart upload into the object store as it arrives (never into memory
 * nor onto this host's disk: a job on any worker host reads it, see Staging), records the intake
 * events and enqueues the job. When the `pipeline` field comes before the file (as clients send it),
 * the pipeline is checked and the job enqueued as soon as the file starts, and the job loads it
 * while it still arrives; the upload's end tells the job `done`, or `abort` with the reason when the
 * upload is refused after all (too large, empty, broken), and then nothing is committed. Otherwise
 * the job is enqueued once the file is in, and nothing is enqueued for a rejected upload.
 */
/** Waits before writing a small upload's intake entries again, when the first write failed. */
const INTAKE_REWRITE_MS = [50, 250];

/** An intake entry written once: here, or by the job that carries it, whichever is first. */
type Once = RecordedEvent & { once: true };

/** A streamed upload's job, queued once the file's head was in, and its begin entry. */
interface Streamed {
  job: JobRef;
  begin: Once;
}

@Injectable()
export class UploadService {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly staging: Staging,
    private readonly pipelines: PipelinesService,
    private readonly status: StatusService,
    private readonly queues: EnvironmentQueues,
    private readonly store: ObjectStore,
    private readonly policy: PipelinePolicy,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** `access` is checked against the pipeline (PipelinePolicy) before anything is queued. */
  async upload(environment: string, req: Request, access: AccessCheck): Promise<string> {
    // A small upload would not need it, but an instance that takes files only when they are small is a trap.
    if (!this.store.configured) {
      throw new ServiceUnavailableError(
        'objectstore',
        'the object store is not configured (OBJECT_STORE_ENDPOINT)',
      ).coded(UploadErrorCode.NoObjectStore);
    }
    const pipelineToken = randomUUID();
    let streamed: Streamed | null = null;
    const length = Number(req.headers['content-length']);
    const size = Number.isSafeInteger(length) && length > 0 ? length : undefined;
    const whole = size !== undefined && size <= INLINE_UPLOAD_BYTES;
    const startEarly = async (got: Received, fields: Map<string, string>): Promise<void> => {
      streamed = await this.startStreaming(environment, pipelineToken, got, fields, access, size).catch(
        () => null,
      );
    };
    let got: Received;
    try {
      got = await receiveUpload(
        this.staging,
        this.config.uploadLimitBytes,
        environment,
        req,
        pipelineToken,
        startEarly,
        whole,
      );
    } catch (err) {
      if (streamed) await this.abortStream(streamed, pipelineToken, environment, err);
      throw err;
    }
    const early = streamed as Streamed | null;
    if (early) {
      try {
        checkReceived(got, this.config.uploadLimitBytes);
        // The job took its publisher token from the fields before the file; one sent after it would
        // be silently lost.
        if (publisherTokenOf(got.fields) !== early.job.publisherToken) {
          throw new ValidationError("multipart field 'publishertoken' must come before 'file'").coded(
            UploadErrorCode.FieldOrder,
          );
        }
      } catch (err) {
        await this.abortStream(early, pipelineToken, environment, err);
        throw err;
      }
      // Recorded before the job may end: its terminal event must stay the job's last. With the begin
      // (written once): when its own write failed and the job has not written it yet, it stays first.
      await this.status.recordAll(early.job, [
        early.begin,
        this.status.event('StreamNotifier', 'end', `received ${got.bytes} bytes; loaded while it arrived`),
      ]);
      await this.staging.done(environment, got.staged as StagedWriter);
      return pipelineToken;
    }
    try {
      const pipeline = got.fields.get('pipeline')?.trim();
      if (got.tooLarge) checkReceived(got, this.config.uploadLimitBytes);
      if (!got.filename)
        throw new ValidationError("multipart field 'file' is required").coded(UploadErrorCode.MissingField);
      if (got.compressed) {
        throw new UnsupportedMediaTypeError(
          `'${got.filename}' uses a compression Tapyard does not read: use .zip, .jar, .tar, .tar.gz, .tgz or .gz`,
        ).coded(UploadErrorCode.UnsupportedFormat);
      }
      if (!pipeline)
        throw new ValidationError("multipart field 'pipeline' is required").coded(
          UploadErrorCode.MissingField,
        );
      const admitted = await this.admit(environment, pipeline, publisherTokenOf(got.fields), access);
      const { publisherToken } = admitted;
      checkReceived(got, this.config.uploadLimitBytes);
      if (archiveKind(got.filename) !== null) {
        await this.stageArchive(environment, pipeline, pipelineToken, publisherToken, got);
        return '';
      }
      if (!admitted.document) assertDataFile(got.filename, got.head, pipeline);

      const job: JobRef = { environment, pipeline, pipelineToken, publisherToken, filename: got.filename };
      if (got.body !== null && admitted.document) {
        await this.enqueueInline(job, got.body, `upload://${got.filename}`);
        return pipelineToken;
      }
      if (got.body !== null) {
        // As for a streamed upload (whose job takes the fields sent before the file), whatever the size.
        if (got.before.has('pipeline') && publisherTokenOf(got.before) !== publisherToken) {
          throw new ValidationError("multipart field 'publishertoken' must come before 'file'").coded(
            UploadErrorCode.FieldOrder,
          );
        }
        await this.enqueueInline(job, got.body);
        return pipelineToken;
      }
      await this.status.record(job, 'StreamNotifier', 'begin', `receiving ${got.filename}`);
      await this.finishStaging(environment, pipelineToken, got);
      const staged = pipelineToken;
      const options = loadJobOptions(environment, pipelineToken, this.config.loadRetry);
      // A document is read whole by its parser, so it is queued once received (never streamed).
      if (admitted.document) {
        await this.queues
          .ingest(environment)
          .enqueue(IngestJob.document, { ...job, staged, uri: `upload://${got.filename}` }, options);
      } else {
        await this.queues
          .ingest(environment)
          .enqueue(IngestJob.load, { ...job, staged, size: got.bytes }, options);
      }
      await this.status.record(
        job,
        'StreamNotifier',
        'end',
        `received ${got.bytes} bytes; queued for processing`,
      );
      return pipelineToken;
    } catch (err) {
      if (got.staged || got.body)
        await this.staging.remove(environment, pipelineToken).catch(() => undefined);
      throw err;
    }
  }

  /**
   * A small file received whole: its job carries it (a document job when `documentUri` is given, else
   * a load job), and its intake entries (begin and end): they are written while the job is queued,
   * not before, and the job's first status write includes them (written once), so they stay ahead of
   * everything the job writes whichever write is first. The job's pickup does not wait for a status
   * write, only for the queue.
   */
  private async enqueueInline(job: JobRef, body: Buffer, documentUri?: string): Promise<void> {
    const { environment, pipelineToken } = job;
    // Written once, here or by the job, whichever is first.
    const entries = [
      this.status.event('StreamNotifier', 'begin', `receiving ${job.filename}`),
      this.status.event('StreamNotifier', 'end', `received ${body.length} bytes; queued for processing`),
    ].map((e) => ({ ...e, once: true as const }));
    const options = loadJobOptions(environment, pipelineToken, this.config.loadRetry);
    const inline = body.toString('base64');
    const queue = this.queues.ingest(environment);
    let written: PromiseSettledResult<void>;
    try {
      written = await this.queueWithIntake(job, entries, (intakeEntries) =>
        documentUri !== undefined
          ? queue.enqueue(IngestJob.document, { ...job, inline, intakeEntries, uri: documentUri }, options)
          : queue.enqueue(
              IngestJob.load,
              { ...job, staged: pipelineToken, inline, intakeEntries, size: body.length },
              options,
            ),
      );
    } catch (err) {
      // The job never started: its status says so rather than staying `processing`.
      await this.status
        .record(
          job,
          'StreamNotifier',
          'error',
          `the upload could not be queued: ${errorMessage(err)}`,
          'error',
        )
        .catch(() => undefined);
      throw err;
    }
    if (written.status === 'fulfilled') return;
    // The job is queued: the upload stands. Its status is found once the entries are written, here
    // (again: they are written once however often they are sent) or by the job with its own.
    for (const ms of INTAKE_REWRITE_MS) {
      await sleep(ms);
      if (
        await this.status.recordAll(job, entries).then(
          () => true,
          () => false,
        )
      )
        return;
    }
    this.logger.warn(
      { pipelineToken, err: errorMessage(written.reason) },
      "an upload's intake entries were not written; its job writes them",
    );
  }

  /**
   * Queues a job that carries its intake entries (written once, see StatusService.of) while they are
   * written here: its pickup waits for the queue alone, and its first status write includes them, so
   * they stay ahead of everything the job writes whichever write is first. Settles once the job is
   * queued (with the queue's error when it was not), with the outcome of the write here.
   */
  private async queueWithIntake(
    job: JobRef,
    entries: readonly Once[],
    enqueue: (intakeEntries: IntakeEntry[]) => Promise<unknown>,
  ): Promise<PromiseSettledResult<void>> {
    const intakeEntries = entries.map((e) => ({
      state: e.state as 'begin' | 'end',
      description: e.description,
      epoch: e.epoch,
    }));
    const [written, queued] = await Promise.allSettled([
      this.status.recordAll(job, entries),
      enqueue(intakeEntries),
    ]);
    if (queued.status === 'rejected') throw queued.reason;
    return written;
  }

  /** The received file as a finished staged input: ended when it was streamed there, written when received whole. */
  private async finishStaging(environment: string, token: string, got: Received): Promise<void> {
    if (got.body !== null) await this.staging.write(environment, token, Readable.from([got.body]));
    else await this.staging.done(environment, got.staged as StagedWriter);
  }

  /**
   * A file already stored elsewhere (an assistant attachment) into a pipeline: the same checks and
   * job as an upload, the file staged as a stream. Returns the pipeline token.
   */
  async uploadStream(
    environment: string,
    pipeline: string,
    filename: string,
    body: NodeJS.ReadableStream,
    access: AccessCheck,
  ): Promise<string> {
    const pipelineToken = randomUUID();
    const admitted = await this.admit(environment, pipeline, null, access);
    if (archiveKind(filename) !== null || COMPRESSED.test(filename)) {
      throw new UnsupportedMediaTypeError(
        `'${filename}' is an archive: upload it through POST /pipeline/upload`,
      ).coded(UploadErrorCode.UnsupportedFormat);
    }
    const staged = pipelineToken;
    try {
      const head = new HeadCollector();
      const tapped = head.tap();
      // pipe() does not forward a failure: the write must still see one.
      body.on('error', (err: Error) => tapped.destroy(err));
      const bytes = await this.staging.write(environment, staged, body.pipe(tapped));
      if (bytes === 0)
        throw new ValidationError(`the file '${filename}' is empty`).coded(UploadErrorCode.Empty);
      if (!admitted.document) assertDataFile(filename, head.bytes(), pipeline);
      const job: JobRef = { environment, pipeline, pipelineToken, publisherToken: null, filename };
      await this.status.record(job, 'StreamNotifier', 'begin', `receiving ${filename}`);
      const options = loadJobOptions(environment, pipelineToken, this.config.loadRetry);
      await (admitted.document
        ? this.queues
            .ingest(environment)
            .enqueue(IngestJob.document, { ...job, staged, uri: `upload://${filename}` }, options)
        : this.queues.ingest(environment).enqueue(IngestJob.load, { ...job, staged, size: bytes }, options));
      await this.status.record(
        job,
        'StreamNotifier',
        'end',
        `received ${bytes} bytes; queued for processing`,
      );
      return pipelineToken;
    } catch (err) {
      await this.staging.remove(environment, staged).catch(() => undefined);
      throw err;
    }
  }

  /**
   * The checks an upload passes before its job exists: the pipeline (present, allowed to the caller,
   * not being deleted) and the publisher token (its catalog's).
   */
  private async admit(
    environment: string,
    pipeline: string,
    publisherToken: string | null,
    access: AccessCheck,
  ): Promise<{ publisherToken: string | null; document: boolean }> {
    const stored = await this.pipelines.getCached(environment, pipeline);
    this.policy.assertMayUpload(access, pipeline, stored.definition);
    if (stored.deletingSince) throw new PipelineDeletingError(pipeline);
    if (publisherToken && publisherToken.length > 200)
      throw new ValidationError('publishertoken is longer than 200 characters').coded(
        UploadErrorCode.InvalidField,
      );
    if (publisherToken)
      await this.status.claimPublisherToken(environment, publisherToken, stored.definition.catalog);
    return { publisherToken, document: isDocumentPipeline(stored.definition) };
  }

  /**
   * Called once the file's head is in: when the pipeline field came first and the file is a data file
   * (not an archive), admits the upload and enqueues its job, which reads the file as it arrives.
   * Returns the job, or null to take the upload the classic way (a refusal is then reported after
   * receipt). `fields`: those sent before the file; later ones do not count for the job. `size`: the
   * request's content-length, when it has one.
   */
  private async startStreaming(
    environment: string,
    pipelineToken: string,
    got: Received,
    fields: Map<string, string>,
    access: AccessCheck,
    size: number | undefined,
  ): Promise<Streamed | null> {
    const pipeline = fields.get('pipeline')?.trim();
    const filename = got.filename;
    const early = publisherTokenOf(fields);
    if (!pipeline || !filename || got.compressed || archiveKind(filename) !== null) return null;
    if (isDocumentPipeline((await this.pipelines.getCached(environment, pipeline)).definition)) return null;
    // Not a data file: no job starts; the classic path refuses it once received.
    if (sniffContent(got.head).kind !== 'text') return null;
    const { publisherToken } = await this.admit(environment, pipeline, early, access);
    const job: JobRef = { environment, pipeline, pipelineToken, publisherToken, filename };
    const begin: Once = {
      ...this.status.event('StreamNotifier', 'begin', `receiving ${filename}; loading while it arrives`),
      once: true,
    };
    // The file waits while this runs: the job is queued as its begin is written, not after. A begin
    // not written here is written by the job, or with the upload's end or error (once either way).
    await this.queueWithIntake(job, [begin], (intakeEntries) =>
      this.queues.ingest(environment).enqueue(
        IngestJob.load,
        {
          ...job,
          staged: pipelineToken,
          stream: { staleMs: UPLOAD_STALE_MS },
          ...(size ? { size } : {}),
          intakeEntries,
        },
        loadJobOptions(environment, pipelineToken, this.config.loadRetry),
      ),
    );
    return { job, begin };
  }

  /** A streamed upload refused after its job started: the job ends without committing anything. */
  private async abortStream(
    { job, begin }: Streamed,
    token: string,
    environment: string,
    err: unknown,
  ): Promise<void> {
    const reason = `the upload was refused (${errorMessage(err)}): nothing was loaded`;
    // Recorded before the job learns of it (as a processing entry: the job's own error ends it), after
    // its begin (written once).
    await this.status
      .recordAll(job, [begin, this.status.event('StreamNotifier', 'error', reason, 'processing')])
      .catch(() => undefined);
    await this.staging.abort(environment, token, reason).catch(() => undefined);
  }

  /**
   * Compressed uploads (spec): staged like any upload, then FileNotifier extracts them in a worker;
   * the caller gets 200 with an empty body. Its jobs share the publisher token (the caller's, or the
   * archive's own token when none was given).
   */
  private async stageArchive(
    environment: string,
    pipeline: string,
    token: string,
    publisherToken: string | null,
    got: Received,
  ): Promise<void> {
    const filename = got.filename as string;
    const bucket = await this.store.bucket(environment, 'staged');
    const key = `${STAGING_PREFIX}${token}/`;
    const payload: IntakePayload = {
      environment,
      pipeline,
      pipelineToken: token,
      publisherToken,
      filename,
      bucket,
      key,
      staged: true,
    };
    const job: JobRef = { environment, pipeline, pipelineToken: token, publisherToken, filename };
    await this.status.record(job, 'StreamNotifier', 'begin', `receiving ${filename}`);
    await this.finishStaging(environment, token, got);
    await this.queues.ingest(environment).enqueue(IngestJob.intake, payload, jobOptions(payload));
    await this.status.record(
      job,
      'StreamNotifier',
      'end',
      `staged ${got.bytes} bytes in ${bucket}; extraction queued`,
    );
  }
}
