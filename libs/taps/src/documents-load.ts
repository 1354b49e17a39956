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
    const key = `taps/${tap}/${pipelineToken}/${objectSafeName(doc.filename)}`;
    await this.deps.store.put(bucket, key, documentBytes(doc.content), 'application/octet-stream');
    const job: JobRef = { environment, pipeline, pipelineToken, publisherToken, filename: doc.filename };
    await this.deps.status.record(
      job,
      'FileNotifier',
      'begin',
      `staged ${doc.uri} from tap '${tap}' as ${key}`,
    );
    await this.deps.queues
      .ingest(environment)
      .enqueue(
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

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * The document's bytes as staged for the parser. `content` is base64 (spec: "base64-style text";
 * the URL-safe alphabet too); text that is not valid base64 is taken as the document's UTF-8 text.
 */
export function documentBytes(content: string): Buffer {
  const compact = content.replace(/[\r\n]+/g, '');
  if (compact.length > 0 && compact.length % 4 !== 1 && BASE64.test(compact)) {
    return Buffer.from(compact.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  }
  return Buffer.from(content, 'utf8');
}

/** A record's metadata rides in the queue: kept only while small (chunks keep scalars of it). */
function boundedMetadata(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  const m = meta ?? {};
  return JSON.stringify(m).length <= 16 * 1024 ? m : {};
}

/** A tap's filename as one plain object-name segment: it is the tap's choice, so it carries no path. */
function objectSafeName(filename: string): string {
  return (
    filename
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .replace(/^\.+/, '_')
      .slice(0, 200) || 'document'
  );
}
