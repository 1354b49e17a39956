import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Transform } from 'node:stream';
import { pipeline as pipeline_ } from 'node:stream/promises';
import type { Request } from 'express';
import {
  CONFIG,
  PayloadTooLargeError,
  TapyardConfig,
  UnsupportedMediaTypeError,
  ValidationError,
  errorMessage,
  readMultipart,
} from '@tapyard/core';
import type { AccessCheck } from '@tapyard/auth';
import { PipelineDeletingError, PipelinePolicy, PipelinesService } from '@tapyard/pipelines';
import { PipelineErrorCode, isDocumentPipeline } from '@tapyard/model';
import { SNIFF_BYTES, sniffContent } from '@tapyard/profiling';
import { EnvironmentQueues, IngestJob, IntakePayload, loadJobOptions } from '@tapyard/queue';
import { archiveKind } from '@tapyard/archives';
import { ObjectStore } from '@tapyard/objectstore';
import { JobRef, StatusService } from '@tapyard/status';
import { STAGING_PREFIX, StagedWriter, Staging } from './staging';
import { jobOptions } from './file-notifier';
import { UploadErrorCode } from './upload-errors';

const COMPRESSED = /\.(zip|gz|tgz|tar|jar|bz2|xz|7z)$/i;

/**
 * How long a streamed upload may stop growing before its job gives up on it. Only a vanished API
 * process leaves a stream without an end: a client that goes away ends the request, and the API
 * then tells the job at once.
 */
const UPLOAD_STALE_MS = 300_000;

interface Received {
  fields: Map<string, string>;
  filename: string | null;
  bytes: number;
  tooLarge: boolean;
  compressed: boolean;
  /** The file's first bytes (up to SNIFF_BYTES): what it is, whatever its name. */
  head: Buffer;
  /** The file part's staged input (its id is the pipeline token), once the part started. */
  staged: StagedWriter | null;
}

/**
 * StreamNotifier: streams a multipart upload into the object store as it arrives (never into memory
 * nor onto this host's disk: a job on any worker host reads it, see Staging), records the intake
 * events and enqueues the job. When the `pipeline` field comes before the file (as clients send it),
 * the pipeline is checked and the job enqueued as soon as the file starts, and the job loads it
 * while it still arrives; the upload's end tells the job `done`, or `abort` with the reason when the
 * upload is refused after all (too large, empty, broken), and then nothing is committed. Otherwise
 * the job is enqueued once the file is in, and nothing is enqueued for a rejected upload.
 */
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
  ) {}

  /** `access` is checked against the pipeline (PipelinePolicy) before anything is queued. */
  async upload(environment: string, req: Request, access: AccessCheck): Promise<string> {
    const pipelineToken = randomUUID();
    let streamed: JobRef | null = null;
    const length = Number(req.headers['content-length']);
    const size = Number.isSafeInteger(length) && length > 0 ? length : undefined;
    const startEarly = async (got: Received, fields: Map<string, string>): Promise<void> => {
      streamed = await this.startStreaming(environment, pipelineToken, got, fields, access, size).catch(
        () => null,
      );
    };
    let got: Received;
    try {
      got = await this.receive(environment, req, pipelineToken, startEarly);
    } catch (err) {
      if (streamed) await this.abortStream(streamed, pipelineToken, environment, err);
      throw err;
    }
    const early = streamed as JobRef | null;
    if (early) {
      try {
        this.checkReceived(got);
        // The job took its publisher token from the fields before the file; one sent after it would
        // be silently lost.
        if (publisherTokenOf(got.fields) !== early.publisherToken) {
          throw new ValidationError("multipart field 'publishertoken' must come before 'file'").coded(
            UploadErrorCode.FieldOrder,
          );
        }
      } catch (err) {
        await this.abortStream(early, pipelineToken, environment, err);
        throw err;
      }
      // Recorded before the job may end: its terminal event must stay the job's last.
      await this.status.record(
        early,
        'StreamNotifier',
        'end',
        `received ${got.bytes} bytes; loaded while it arrived`,
      );
      await this.staging.done(environment, got.staged as StagedWriter);
      return pipelineToken;
    }
    try {
      const pipeline = got.fields.get('pipeline')?.trim();
      if (got.tooLarge) this.checkReceived(got);
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
      this.checkReceived(got);
      if (archiveKind(got.filename) !== null) {
        await this.stageArchive(environment, pipeline, pipelineToken, publisherToken, got);
        return '';
      }
      if (!admitted.document) assertDataFile(got.filename, got.head, pipeline);

      const job: JobRef = { environment, pipeline, pipelineToken, publisherToken, filename: got.filename };
      await this.status.record(job, 'StreamNotifier', 'begin', `receiving ${got.filename}`);
      await this.staging.done(environment, got.staged as StagedWriter);
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
      if (got.staged) await this.staging.remove(environment, pipelineToken).catch(() => undefined);
      throw err;
    }
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
    const stored = await this.pipelines.get(environment, pipeline);
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

  /** What only the whole file tells: within the upload limit, and not empty. */
  private checkReceived(got: Received): void {
    if (got.tooLarge)
      throw new PayloadTooLargeError(
        `the file is larger than the upload limit (UPLOAD_LIMIT, ${this.config.uploadLimitBytes} bytes)`,
      ).coded(UploadErrorCode.TooLarge);
    if (got.bytes === 0)
      throw new ValidationError(`the uploaded file '${got.filename}' is empty`).coded(UploadErrorCode.Empty);
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
  ): Promise<JobRef | null> {
    const pipeline = fields.get('pipeline')?.trim();
    const filename = got.filename;
    const early = publisherTokenOf(fields);
    if (!pipeline || !filename || got.compressed || archiveKind(filename) !== null) return null;
    if (isDocumentPipeline((await this.pipelines.get(environment, pipeline)).definition)) return null;
    // Not a data file: no job starts; the classic path refuses it once received.
    if (sniffContent(got.head).kind !== 'text') return null;
    const { publisherToken } = await this.admit(environment, pipeline, early, access);
    const job: JobRef = { environment, pipeline, pipelineToken, publisherToken, filename };
    await this.status.record(
      job,
      'StreamNotifier',
      'begin',
      `receiving ${filename}; loading while it arrives`,
    );
    await this.queues
      .ingest(environment)
      .enqueue(
        IngestJob.load,
        { ...job, staged: pipelineToken, stream: { staleMs: UPLOAD_STALE_MS }, ...(size ? { size } : {}) },
        loadJobOptions(environment, pipelineToken, this.config.loadRetry),
      );
    return job;
  }

  /** A streamed upload refused after its job started: the job ends without committing anything. */
  private async abortStream(job: JobRef, token: string, environment: string, err: unknown): Promise<void> {
    const reason = `the upload was refused (${errorMessage(err)}): nothing was loaded`;
    // Recorded before the job learns of it (as a processing entry: the job's own error ends it).
    await this.status.record(job, 'StreamNotifier', 'error', reason, 'processing').catch(() => undefined);
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
    await this.staging.done(environment, got.staged as StagedWriter);
    await this.queues.ingest(environment).enqueue(IngestJob.intake, payload, jobOptions(payload));
    await this.status.record(
      job,
      'StreamNotifier',
      'end',
      `staged ${got.bytes} bytes in ${bucket}; extraction queued`,
    );
  }

  /**
   * `fileStarts`: called once the file's head is in (its data already flowing into the object store),
   * with the fields sent before the file.
   */
  private async receive(
    environment: string,
    req: Request,
    token: string,
    fileStarts: (got: Received, fields: Map<string, string>) => Promise<void>,
  ): Promise<Received> {
    const got: Received = {
      fields: new Map(),
      filename: null,
      bytes: 0,
      tooLarge: false,
      compressed: false,
      head: Buffer.alloc(0),
      staged: null,
    };
    const writes: Promise<void>[] = [];
    // Each is observed at once: one that fails while the body is still parsed must not be an
    // unhandled rejection; the failure is reported below, after the parse settles.
    const track = (p: Promise<void>) => {
      p.catch(() => undefined);
      writes.push(p);
    };
    // Created before the body flows so the file part is piped the moment it starts: no data may
    // flow unobserved.
    const staged = await this.staging.writer(environment, token);
    try {
      await readMultipart(req, {
        notMultipart: "upload with Content-Type multipart/form-data and a 'file' part",
        limits: { files: 1, fields: 20, fieldSize: 64 * 1024, fileSize: this.config.uploadLimitBytes },
        onField: (name, value) => got.fields.set(name, value),
        onFile: ({ field, filename, stream: file }) => {
          if (field !== 'file' || got.filename !== null) return void file.resume();
          got.filename = (filename || 'upload').replace(/[\r\n\t]/g, ' ').slice(0, 255);
          if (COMPRESSED.test(got.filename) && archiveKind(got.filename) === null) {
            got.compressed = true;
            return void file.resume();
          }
          file.on('limit', () => (got.tooLarge = true));
          got.staged = staged;
          const head = new HeadCollector();
          const fieldsBefore = new Map(got.fields);
          track(
            pipeline_(file, head.tap(), staged).then(() => {
              got.bytes = staged.bytes;
            }),
          );
          // A streaming job starts once the head shows a data file (or the file ended shorter).
          track(
            head.seen.then(() => {
              got.head = head.bytes();
              return fileStarts(got, fieldsBefore);
            }),
          );
        },
      });
      await Promise.all(writes);
    } catch (err) {
      // A broken or aborted upload leaves nothing behind. The writer is discarded first: a file
      // part cut off mid-way never ends it.
      await staged.discard();
      await Promise.allSettled(writes);
      await this.staging.remove(environment, token).catch(() => undefined);
      throw err;
    }
    if (got.staged === null) staged.destroy();
    return got;
  }
}

/** 415 naming what the file is when its content is not a data file (the pipeline reads CSV, JSON or XML). */
function assertDataFile(filename: string, head: Buffer, pipeline: string): void {
  const sniffed = sniffContent(head);
  if (sniffed.kind === 'binary') {
    throw new UnsupportedMediaTypeError(
      `'${filename}' is ${sniffed.type}; pipeline '${pipeline}' reads CSV, JSON or XML data files ` +
        '(documents go to a document pipeline)',
    ).coded(PipelineErrorCode.UnsupportedFile);
  }
}

/** Keeps the first SNIFF_BYTES of a stream that passes through it unchanged. */
class HeadCollector {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private reached!: () => void;
  /** Settles once SNIFF_BYTES went through, or the stream ended or failed before. */
  readonly seen = new Promise<void>((resolve) => (this.reached = resolve));

  tap(): Transform {
    const through = new Transform({
      transform: (chunk: Buffer, _encoding, done) => {
        if (this.kept < SNIFF_BYTES) {
          const part = chunk.subarray(0, SNIFF_BYTES - this.kept);
          this.chunks.push(part);
          this.kept += part.length;
          if (this.kept >= SNIFF_BYTES) this.reached();
        }
        done(null, chunk);
      },
      flush: (done) => {
        this.reached();
        done();
      },
    });
    for (const end of ['close', 'error']) through.once(end, () => this.reached());
    return through;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

function publisherTokenOf(fields: Map<string, string>): string | null {
  return fields.get('publishertoken')?.trim() || null;
}
