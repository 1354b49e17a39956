import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import { TapyardConfig } from '@tapyard/core';
import { StagedWriter, Staging } from '@tapyard/intake';
import { EnvironmentQueues, IngestJob, IngestPayload, loadJobOptions } from '@tapyard/queue';
import { JobRef, StatusService } from '@tapyard/status';
import type { RecordChunk } from '@tapyard/sandbox';
import { ColumnNamer, RecordSink } from './record-sinks';

export interface RecordsLoadContext {
  environment: string;
  tap: string;
  pipeline: string;
  publisherToken: string;
  /** CSV pipelines map record keys to columns; JSON/XML pipelines take records as they are. */
  mapKeys: boolean;
  /** Records after which the job starts while the script still runs (0: never stream). */
  streamAfter: number;
  /** How long a streaming job waits for a silent run before giving up. */
  staleMs: number;
}

export interface LoadOutcome {
  persisted: boolean;
  pipelineTokens: string[];
}

/**
 * Run mode, structured taps: the records are staged in the object store as the harness wrote them
 * (JSON lines), and become one ingestion job under the run's publisher token, which any worker may
 * take. A short run is loaded when the script ends; a long one starts its job after `streamAfter`
 * records, and the job loads the records as they arrive. A run that fails loads nothing: a streaming
 * job is told to abort before it commits.
 *
 * Columns of a streaming job are the keys of the records seen before it started. A key first met
 * later cannot join that load, so the streaming job is superseded (it commits nothing) and the whole
 * input loads as a second job once the script ends: correct, only slower.
 */
export class RecordsLoad implements RecordSink {
  count = 0;
  readonly namer = new ColumnNamer();
  private readonly pipelineToken = randomUUID();
  /** The run's records, staged under the first job's token; a superseding job reads the same input. */
  private out: StagedWriter | null = null;
  private streaming: string | null = null;
  private supersededBy: string | null = null;
  private readonly tokens: string[] = [];
  private pending = '';
  /** The keys each job was started with. */
  private readonly started = new Map<string, string[]>();

  constructor(
    private readonly ctx: RecordsLoadContext,
    private readonly deps: {
      config: TapyardConfig;
      staging: Staging;
      status: StatusService;
      queues: EnvironmentQueues;
    },
  ) {}

  /** Chunks come as text with their new keys: the harness checks rows (run with `rows`, no parsing). */
  async add(chunk: RecordChunk, first: number): Promise<void> {
    const known = this.namer.keys.length;
    for (const key of chunk.keys) this.namer.name(key);
    this.count += chunk.count;
    if (chunk.count === 0) return;
    if (this.ctx.mapKeys && this.streaming && !this.supersededBy && this.namer.keys.length > known) {
      await this.supersede(first);
    }
    this.out ??= await this.deps.staging.writer(this.ctx.environment, this.pipelineToken);
    // Lines are gathered into ~256 KiB writes: small writes would dominate a long run.
    this.pending += chunk.text + '\n';
    if (this.pending.length >= 1 << 18) await this.flush();
    if (!this.streaming && this.ctx.streamAfter > 0 && this.count >= this.ctx.streamAfter) {
      await this.flush();
      this.streaming = this.pipelineToken;
      await this.enqueue(this.pipelineToken, true);
    }
  }

  /** After the script: `error` null means it succeeded. */
  async finish(error: string | null): Promise<LoadOutcome> {
    const { environment } = this.ctx;
    const out = this.out;
    let failure = error;
    if (out) {
      await this.flush().catch(() => undefined);
      out.end();
      // `finished` also settles for a writer that failed before this point (`once` would wait for ever).
      await finished(out).catch((err: unknown) => {
        failure ??= `its records could not be staged: ${err instanceof Error ? err.message : String(err)}`;
      });
    }
    if (failure !== null) {
      // A streaming job learns of the failure and ends, removing the input; otherwise it goes here.
      // A superseded job leaves the input to its successor, which never comes now: removed here.
      if (this.streaming && !this.supersededBy) {
        // A store that fails here too: the streaming job gives up after its retry time, the sweep removes the rest.
        await this.deps.staging
          .abort(environment, this.pipelineToken, `the tap run failed: ${failure}`)
          .catch(() => undefined);
      } else if (out) await this.deps.staging.remove(environment, this.pipelineToken).catch(() => undefined);
      return { persisted: false, pipelineTokens: this.tokens };
    }
    if (!out || this.count === 0) return { persisted: false, pipelineTokens: [] };
    await this.deps.staging.done(environment, out);
    if (this.supersededBy) await this.enqueue(this.supersededBy, false);
    else if (this.streaming) await this.received(this.pipelineToken);
    else await this.enqueue(this.pipelineToken, false);
    return { persisted: true, pipelineTokens: this.tokens };
  }

  private async supersede(first: number): Promise<void> {
    const token = randomUUID();
    await this.flush();
    this.supersededBy = token;
    const before = this.started.get(this.streaming as string) ?? [];
    const added = this.namer.keys.filter((k) => !before.includes(k));
    await this.deps.staging.supersede(
      this.ctx.environment,
      this.pipelineToken,
      this.streaming as string,
      `record ${first} or later brought new key(s) ${added.map((k) => `'${k}'`).join(', ')}; ` +
        `the run's records load in job ${token}`,
    );
  }

  private jobRef(pipelineToken: string): JobRef {
    return {
      environment: this.ctx.environment,
      pipeline: this.ctx.pipeline,
      pipelineToken,
      publisherToken: this.ctx.publisherToken,
      filename: `tap:${this.ctx.tap}`,
    };
  }

  private async enqueue(pipelineToken: string, stream: boolean): Promise<void> {
    const job = this.jobRef(pipelineToken);
    const keys = this.ctx.mapKeys ? [...this.namer.keys] : [];
    const columns = this.ctx.mapKeys ? [...this.namer.columns] : [];
    this.started.set(pipelineToken, keys);
    await this.deps.status.record(
      job,
      'StreamNotifier',
      'begin',
      `receiving records from tap '${this.ctx.tap}'`,
    );
    const payload: IngestPayload = {
      ...job,
      // Every job of the run reads the one staged input.
      staged: this.pipelineToken,
      records: { keys, columns, ...(stream ? { stream: { staleMs: this.ctx.staleMs } } : {}) },
    };
    await this.deps.queues
      .ingest(this.ctx.environment)
      .enqueue(
        IngestJob.load,
        payload,
        loadJobOptions(this.ctx.environment, pipelineToken, this.deps.config.loadRetry),
      );
    this.tokens.push(pipelineToken);
    if (!stream) await this.received(pipelineToken);
  }

  private async received(pipelineToken: string): Promise<void> {
    await this.deps.status.record(
      this.jobRef(pipelineToken),
      'StreamNotifier',
      'end',
      `received ${this.count} records from tap '${this.ctx.tap}'; ` +
        (this.streaming === pipelineToken ? 'the job loaded them as they came' : 'queued for processing'),
    );
  }

  private async flush(): Promise<void> {
    if (this.pending.length === 0 || !this.out) return;
    // A writer that failed earlier (the object store) says so here, rather than waiting for a drain.
    if (this.out.errored) throw this.out.errored;
    const ok = this.out.write(this.pending);
    this.pending = '';
    if (!ok) await once(this.out, 'drain');
  }
}
