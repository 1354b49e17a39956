import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, TapyardConfig, errorMessage, isOutage } from '@tapyard/core';
import { CreatedObjects } from '@tapyard/destinations';
import { EmbeddingsService } from '@tapyard/embeddings';
import type { Embedder } from '@tapyard/embeddings';
import { Spool, Staging } from '@tapyard/intake';
import { ObjectStore } from '@tapyard/objectstore';
import { PipelineDefinition, unstructuredAttributes } from '@tapyard/model';
import { DataLocation, PipelinesService, describeLocation, locationUnclaimedError } from '@tapyard/pipelines';
import { DocumentPayload, RetryLaterError } from '@tapyard/queue';
import { JobEvents, JobOutcome, ProcessName, StatusService, jobRef } from '@tapyard/status';
import { ChunkRecord, VectorContainers, VectorStore, VectorStoresService } from '@tapyard/vector-stores';
import { chunkText } from '../chunk/chunk-text';
import { DocumentError } from '../document.errors';
import { extractText } from '../parse/extract-text';
import { chunkId, tapMetadata } from './chunk-identity';

/** A failure attributed to the stage it happened in; `retryable` when a later delivery may succeed. */
class DocumentStageError extends Error {
  constructor(
    readonly processName: ProcessName,
    message: string,
    readonly outcome: JobOutcome = 'error',
    readonly retryable = false,
  ) {
    super(message);
  }
}

/** Chunks embedded and written per step: bounds memory and gives progress notes. */
const SLICE = 256;
/** How long a container this process prepared is taken as prepared (see DocumentLoader.prepare). */
const PREPARED_FOR_MS = 60_000;

/**
 * One document into the pipeline's vector store: parse (DataQuality), chunk and embed
 * (Transformation), then write (VectorStoreLoader), under JobRunner's begin and end. Idempotent by
 * content: chunks keep ids derived from (uri, index, text), so a document loaded again writes nothing,
 * and a changed one gets its new chunks written and its stale ones removed.
 */
@Injectable()
export class DocumentLoader {
  private readonly logger = new Logger(DocumentLoader.name);
  /** Per store client (a changed secret makes a new one): containers prepared, until when. */
  private readonly prepared = new WeakMap<VectorStore, Map<string, number>>();

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    private readonly pipelines: PipelinesService,
    private readonly status: StatusService,
    private readonly store: ObjectStore,
    private readonly spool: Spool,
    private readonly staging: Staging,
    private readonly vectorStores: VectorStoresService,
    private readonly containers: VectorContainers,
    private readonly embeddings: EmbeddingsService,
    private readonly created: CreatedObjects,
  ) {}

  async run(p: DocumentPayload, attempt: { made: number; max: number } = { made: 0, max: 1 }): Promise<void> {
    // A job's events go in three writes (begin; parsed and chunked; end), each holding what was kept
    // since the last: eight round trips per document, each under the job's lock, were worker CPU.
    const events = this.status.of(jobRef(p), p.intakeEntries);
    let local: string | null = null;
    try {
      const { definition: def, mayAdopt } = await this.pipelines
        .getForLoading(p.environment, p.pipeline)
        .catch((err: unknown) => {
          throw new DocumentStageError(
            'JobRunner',
            `pipeline '${p.pipeline}' cannot load: ${errorMessage(err)}`,
            'error',
            isOutage(err),
          );
        });
      const target = def.destination.vectorStore;
      if (!target || !def.source.fileAttributes.unstructuredAttributes) {
        throw new DocumentStageError(
          'JobRunner',
          `pipeline '${p.pipeline}' takes no documents: it needs source.fileAttributes.unstructuredAttributes and a destination.vectorStore`,
        );
      }
      const vs = await this.vectorStores.get(p.environment, target.store).catch((err: unknown) => {
        throw new DocumentStageError('JobRunner', errorMessage(err), 'error', isOutage(err));
      });
      const container = vs.containerName(target.collection, target.schema);
      await events.record('JobRunner', 'begin', `loading document ${p.uri} into ${vs.name} '${container}'`);

      local = await this.stage(p);
      const result = await this.load(events, p, def, local, vs, container, mayAdopt);
      // This host's copy goes before the terminal event: nothing of a job outlives its end.
      local = await this.dropLocal(local);
      await events.record('JobRunner', 'end', result.note, result.outcome);
      await this.cleanUp(p, local, 'ended');
    } catch (err) {
      if (err instanceof RetryLaterError) {
        await events.flush();
        await this.cleanUp(p, local, 'again');
        throw err;
      }
      const e = err instanceof DocumentStageError ? err : classify(err);
      if (e.retryable && attempt.made + 1 < attempt.max) {
        await events.record(
          e.processName,
          'processing',
          `${e.message}; will retry (delivery ${attempt.made + 1} of ${attempt.max})`,
        );
        await this.cleanUp(p, local, 'again');
        throw new RetryLaterError(e.message);
      }
      this.logger.warn(
        { pipelineToken: p.pipelineToken, processName: e.processName, err: e.message },
        'document job failed',
      );
      local = await this.dropLocal(local);
      await events.record(e.processName, e.outcome === 'warning' ? 'end' : 'error', e.message, e.outcome);
      await this.cleanUp(p, local, 'ended');
    }
  }

  private async load(
    events: JobEvents,
    p: DocumentPayload,
    def: PipelineDefinition,
    path: string,
    vs: VectorStore,
    container: string,
    mayAdopt: boolean,
  ): Promise<{ note: string; outcome: JobOutcome }> {
    const attrs = unstructuredAttributes(def.source.fileAttributes.unstructuredAttributes);

    events.add('DataQuality', 'begin', `parsing ${p.filename}`);
    const bounds = this.config.documents;
    const extracted = await extractText({ path, filename: p.filename }, attrs.parser, {
      maxDecompressedBytes: bounds.maxDecompressedBytes,
      maxRatio: bounds.maxCompressionRatio,
      memoryBytes: bounds.parseMemoryBytes,
    }).catch((err: unknown) => {
      if (err instanceof DocumentError)
        throw new DocumentStageError(
          'DataQuality',
          err.message,
          err.severity === 'warning' ? 'warning' : 'error',
        );
      throw err;
    });
    const contentHash = await sha256File(path);
    events.add(
      'DataQuality',
      'end',
      `${extracted.format}: ${extracted.text.length} characters of text${extracted.pages ? ` from ${extracted.pages} pages` : ''}${
        extracted.warnings.length ? `; ${extracted.warnings.join('; ')}` : ''
      }`,
    );

    events.add('Transformation', 'begin', 'chunking and embedding');
    const embedder = await this.embedder(p.environment);
    const size = Math.min(attrs.chunking.size, embedder.maxInputTokens - 2);
    const chunks = chunkText(extracted.text, embedder.tokenizer, { ...attrs.chunking, size });
    const ingestedAt = new Date().toISOString();
    const own = tapMetadata(p.metadata, attrs.metadata.keep);
    const records = chunks.map((c) => ({
      id: chunkId(p.uri, c.index, c.text),
      text: c.text,
      metadata: {
        ...own,
        uri: p.uri,
        filename: p.filename,
        chunkIndex: c.index,
        pipeline: p.pipeline,
        ...(p.tap ? { tap: p.tap } : {}),
        contentHash,
        ingestedAt,
        ...(extracted.title ? { title: extracted.title.slice(0, 500) } : {}),
      },
    }));

    await events.record(
      'VectorStoreLoader',
      'begin',
      `writing ${records.length} chunks into ${vs.name} '${container}'`,
    );
    const prepared = await this.prepare(p, vs, container, embedder, mayAdopt);
    const existing = new Set(await this.withStore(vs, () => vs.chunkIds(container, p.uri)));
    const wanted = new Set(records.map((r) => r.id));
    const missing = records.filter((r) => !existing.has(r.id));
    const stale = [...existing].filter((id) => !wanted.has(id));

    let embedded = 0;
    for (let i = 0; i < missing.length; i += SLICE) {
      const slice = missing.slice(i, i + SLICE);
      const vectors = await embedder.embed(slice.map((r) => r.text)).catch((err: unknown) => {
        throw new DocumentStageError(
          'Transformation',
          `embedding with ${embedder.model} failed: ${errorMessage(err)}`,
          'error',
          isOutage(err),
        );
      });
      const batch: ChunkRecord[] = slice.map((r, j) => ({ ...r, vector: vectors[j] }));
      await this.withStore(vs, () => vs.upsert(container, batch));
      embedded += slice.length;
      if (missing.length > SLICE) {
        await events.record(
          'VectorStoreLoader',
          'processing',
          `${embedded} of ${missing.length} new chunks written`,
        );
      }
    }
    events.add(
      'Transformation',
      'end',
      `${chunks.length} chunks of at most ${size} tokens (${embedder.model}); ${missing.length} embedded, ${chunks.length - missing.length} unchanged`,
    );
    await this.withStore(vs, () => vs.delete(container, stale));
    const note =
      missing.length === 0 && stale.length === 0
        ? `unchanged: the ${chunks.length} chunks of ${p.uri} are already in ${vs.name} '${container}'; nothing written`
        : `${missing.length} chunks written, ${stale.length} stale chunks removed${prepared.created ? ` (created '${container}')` : ''}`;
    events.add('VectorStoreLoader', 'end', note);
    if (chunks.length === 0) {
      return {
        note: `${p.uri} gave no text to load${stale.length ? `; its ${stale.length} old chunks were removed` : ''}`,
        outcome: 'warning',
      };
    }
    return { note, outcome: 'success' };
  }

  /**
   * The container made ready for the embedder's vectors (created, recorded, its model checked: a
   * transaction and about nine queries). A container this process prepared for the same model within
   * PREPARED_FOR_MS is only checked to still exist with that dimension (one query): a worker loads
   * documents into one container in bursts, and a dropped or replaced container is prepared again.
   * A pipeline that may not adopt (StoredPipeline.mayAdopt false) is refused an existing container no
   * pipeline of its environment created, on every load, before anything is written there.
   */
  private async prepare(
    p: DocumentPayload,
    vs: VectorStore,
    container: string,
    embedder: Embedder,
    mayAdopt: boolean,
  ): Promise<{ created: boolean }> {
    const location: DataLocation = { store: 'vectorstore', vectorStore: vs.name, container };
    const key = `${p.environment}\u0000${p.pipeline}\u0000${container}\u0000${embedder.model}\u0000${embedder.dimension}`;
    const known = this.prepared.get(vs);
    const until = known?.get(key);
    if (until !== undefined && until > Date.now()) {
      const dimension = await this.withStore(vs, () => vs.dimension(container));
      if (dimension === embedder.dimension) {
        // It exists: the creator's record may have gone since (its pipeline deleted without its data).
        if (!mayAdopt) await this.assertClaimed(p, vs, container);
        return { created: false };
      }
      known?.delete(key);
    }
    const result = await this.withStore(vs, () =>
      this.created.claim(
        p.environment,
        p.pipeline,
        async (record) => {
          // Before the store is asked to create or adapt it (Chroma records a dimension on an empty
          // collection made elsewhere): a container that is there must be one a pipeline created.
          const existed = !mayAdopt && (await vs.exists(container));
          if (existed) await this.assertClaimed(p, vs, container);
          // One record per container however many jobs raced to create it (a store may accept the
          // same create twice): the id is derived from the container itself. The container carries it
          // (its creation mark), so one dropped and made again by another tool is no longer this one.
          const creationId = chunkId(`${p.environment}/${p.pipeline}`, 0, `${vs.name}/${container}`);
          const r = await this.containers.prepare(
            p.environment,
            vs,
            container,
            { model: embedder.model, dimension: embedder.dimension },
            creationId,
          );
          // Made by someone else since: claims of this container run one at a time (below), so a
          // pipeline's creation is recorded by now, and what another tool made is refused.
          if (!mayAdopt && !existed && !r.created) await this.assertClaimed(p, vs, container);
          if (r.created) await record(location, creationId, { marked: true });
          return r;
        },
        `vectorstore/${vs.name}/${container}`,
      ),
    );
    const entries = known ?? new Map<string, number>();
    entries.set(key, Date.now() + PREPARED_FOR_MS);
    this.prepared.set(vs, entries);
    return result;
  }

  /**
   * Refuses `location` (which exists) unless a pipeline of the job's environment recorded creating it,
   * and the container still carries that creation's mark when it was made with one.
   */
  private async assertClaimed(p: DocumentPayload, vs: VectorStore, container: string): Promise<void> {
    const location: DataLocation = { store: 'vectorstore', vectorStore: vs.name, container };
    const creations = await this.created.creationsAt(p.environment, location, p.pipeline);
    // Made before containers carried marks: the record alone answers, as it did then.
    if (creations.some((c) => !c.marked)) return;
    if (creations.length > 0) {
      const mark = await vs.creationMark(container);
      if (creations.some((c) => c.creationId === mark)) return;
    }
    throw new DocumentStageError(
      'VectorStoreLoader',
      locationUnclaimedError(p.pipeline, describeLocation(location)).message,
    );
  }

  private async embedder(environment: string): Promise<Embedder> {
    return this.embeddings.forEnvironment(environment).catch((err: unknown) => {
      throw new DocumentStageError('Transformation', errorMessage(err), 'error', isOutage(err));
    });
  }

  /** A store call: an outage may pass (retryable), anything else is the store's answer. */
  private async withStore<T>(vs: VectorStore, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (err instanceof DocumentStageError) throw err;
      throw new DocumentStageError(
        'VectorStoreLoader',
        `${vs.name}: ${errorMessage(err)}`,
        'error',
        isOutage(err),
      );
    }
  }

  /**
   * The document (carried in its job, an upload's staged input, a tap's or an archive entry's object)
   * copied into this host's spool, where the parser reads it. The local name is a fresh token: the
   * document's filename is metadata (a tap chooses it freely) and never part of a path.
   */
  private async stage(p: DocumentPayload): Promise<string> {
    const path = await this.spool.reserve(p.environment, `${randomUUID()}.document`);
    await this.copyInto(p, path).catch(async (err: unknown) => {
      await this.spool.remove(path).catch(() => undefined);
      if (err instanceof DocumentStageError) throw err;
      throw new DocumentStageError(
        'JobRunner',
        `cannot read the document ${p.uri}: ${errorMessage(err)}`,
        'error',
        isOutage(err),
      );
    });
    return path;
  }

  private copyInto(p: DocumentPayload, path: string): Promise<void> {
    if (p.inline !== undefined) return writeFile(path, Buffer.from(p.inline, 'base64'), { mode: 0o600 });
    if (p.staged) return this.staging.download(p.environment, p.staged, path);
    if (p.bucket && p.key) return this.store.download(p.bucket, p.key, path);
    return Promise.reject(new DocumentStageError('JobRunner', 'the job names no staged document'));
  }

  private async dropLocal(local: string | null): Promise<null> {
    if (local) await this.spool.remove(local).catch(() => undefined);
    return null;
  }

  /**
   * This host's copy goes whenever the job stops; an upload's staged input once the job `ended` (a
   * tap's staged object stays: the tap ledger owns it).
   */
  private async cleanUp(p: DocumentPayload, local: string | null, how: 'ended' | 'again'): Promise<void> {
    await this.dropLocal(local);
    if (how === 'ended' && p.staged)
      await this.staging.remove(p.environment, p.staged).catch(() => undefined);
  }
}

/**
 * Outages are retried (isOutage), the platform database's connections included: a document job failed
 * for good in CI when a metadata connection took over 10 s to open under load while it read the
 * embedding secret.
 */
function classify(err: unknown): DocumentStageError {
  return new DocumentStageError('JobRunner', errorMessage(err), 'error', isOutage(err));
}

function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (b) => h.update(b))
      .on('end', () => resolve(h.digest('hex')))
      .on('error', reject);
  });
}
