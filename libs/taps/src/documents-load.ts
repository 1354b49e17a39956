import { randomUUID } from 'node:crypto';
import { TapyardConfig } from '@tapyard/core';
import { ObjectStore } from '@tapyard/objectstore';
import { EnvironmentQueues, IngestJob, loadJobOptions } from '@tapyard/queue';
import type { RecordChunk } from '@tapyard/sandbox';
import { JobRef, StatusService } from '@tapyard/status';
import { LedgerService } from './ledger.service';
import { RecordSink, asDocument } from './record-sinks';
import { TapsRepository } from './taps.repository';

export interface DocumentsLoadContext {
  environment: string;
  tap: string;
  /** null: the tap feeds nothing; documents are checked and counted only. */
  pipeline: string | null;
  publisherToken: string;
}

/**
 * Run mode, document taps: one job per new or changed document. Each is staged in the environment's
 * staged bucket (`taps/<tap>/<pipelineToken>/<filename>`) and recorded in the ledger under
 * `<tap>|<uri>` with its content hash; a document whose hash the ledger already holds is skipped.
 */
export class DocumentsLoad implements RecordSink {
  readonly pipelineTokens: string[] = [];
  unchanged = 0;
  private bucket: string | null = null;

  constructor(
    private readonly ctx: DocumentsLoadContext,
    private readonly deps: {
      config: TapyardConfig;
      store: ObjectStore;
      status: StatusService;
      queues: EnvironmentQueues;
      repo: TapsRepository;
      ledger: LedgerService;
    },
  ) {}

  async add(chunk: RecordChunk, first: number): Promise<void> {
    for (let i = 0; i < chunk.records.length; i++) await this.one(chunk.records[i], first + i);
  }

  private async one(record: unknown, index: number): Promise<void> {
    const doc = asDocument(record, index);
    const { environment, tap, pipeline, publisherToken } = this.ctx;
    if (!pipeline) return;
    const previous = await this.deps.repo.ledgerEntry(environment, tap, doc.uri);
    if (previous?.contentHash === doc.content_hash) {
      this.unchanged++;
      return;
    }
    this.bucket ??= await this.deps.store.bucket(environment, 'staged');
    const bucket = this.bucket;
    const pipelineToken = randomUUID();
    const key = `taps/${tap}/${pipelineToken}/${doc.filename.replace(/[/\\]/g, '_')}`;
    await this.deps.store.put(bucket, key, documentBytes(doc.filename, doc.content), 'application/octet-stream');
    const job: JobRef = { environment, pipeline, pipelineToken, publisherToken, filename: doc.filename };
    await this.deps.status.record(
      job,
      'FileNotifier',
      'begin',
      `staged ${doc.uri} from tap '${tap}' as ${key}`,
    );
    await this.deps.queues
      .ingest(environment)
      .add(
        IngestJob.document,
        { ...job, bucket, key, uri: doc.uri, tap, metadata: boundedMetadata(doc.metadata) },
        loadJobOptions(environment, pipelineToken, this.deps.config.loadRetry),
      );
    await this.deps.repo.recordDocument(environment, tap, pipeline, {
      uri: doc.uri,
      filename: doc.filename,
      contentHash: doc.content_hash,
      stagedPath: `${bucket}/${key}`,
      pipelineToken,
      processedAt: new Date().toISOString(),
    });
    if (previous) await this.deps.ledger.removeStaged([previous]);
    await this.deps.status.record(job, 'FileNotifier', 'end', 'queued for loading');
    this.pipelineTokens.push(pipelineToken);
  }
}

/** Binary formats travel base64-encoded in a record's `content` (spec: "base64-style text"). */
const BINARY = /\.(pdf|docx)$/i;

/**
 * The document's bytes as staged for the parser: `content` decoded from base64 for binary formats (a
 * `%PDF`/ZIP text sent as is stays as it is), and text formats as UTF-8.
 */
export function documentBytes(filename: string, content: string): Buffer {
  if (BINARY.test(filename) && !content.startsWith('%PDF') && /^[A-Za-z0-9+/=\s_-]*$/.test(content.slice(0, 4096))) {
    return Buffer.from(content, 'base64');
  }
  return Buffer.from(content, 'utf8');
}

/** A record's metadata rides in the queue: kept only while small (chunks keep scalars of it). */
function boundedMetadata(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  const m = meta ?? {};
  return JSON.stringify(m).length <= 16 * 1024 ? m : {};
}
