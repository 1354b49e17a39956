import { extname, join } from 'node:path';
import { ValidationError } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { SecretNotFoundError, SecretsService } from '@tapyard/secrets';
import { PipelineDefinition } from '@tapyard/pipelines';
import { ProcessName } from '@tapyard/status';
import { Capabilities, LoadResult, LoadTarget, Payload, RejectedRow } from '../destination';
import { SINK_REJECTS, SinkLedger } from './sink-ledger';

/**
 * What every sink shares (REST, brokers, warehouses): typed batches in, a delivery record per job
 * (a redelivery sends nothing), refused rows kept in the ledger, and nothing to take back on
 * deleteData: what was delivered is the receiver's.
 */
export abstract class Sink {
  abstract readonly name: string;
  abstract readonly processName: ProcessName;
  readonly capabilities: Capabilities = {
    exactlyOnce: true,
    schemaEvolution: true,
    ordered: true,
    maxBatchRows: null,
    csvPassThrough: false,
    retractable: false,
  };
  readonly encoder = join(__dirname, '..', 'encoders', `typed${extname(__filename)}`);

  /**
   * `policy`: where the sink may connect on a pipeline's behalf (its address is the pipeline's choice).
   * `secrets`: its section names the secret holding its credentials.
   */
  protected constructor(
    protected readonly ledger: SinkLedger,
    protected readonly secrets: SecretsService,
    protected readonly policy: EgressPolicy,
  ) {}

  /** The fields of the secret the sink's section names; a missing one is the pipeline's mistake (400). */
  protected async sectionSecret(environment: string, secretName: string): Promise<Record<string, string>> {
    try {
      return await this.secrets.reveal(environment, secretName);
    } catch (err) {
      if (err instanceof SecretNotFoundError)
        throw new ValidationError(`secret '${secretName}' of destination.${this.name} does not exist`);
      throw err;
    }
  }

  /** A sink loads what its own section of `destination` (named like the sink) configures. */
  selects(destination: PipelineDefinition['destination']): boolean {
    return destination[this.name] !== undefined && destination[this.name] !== null;
  }

  committed(target: LoadTarget): Promise<LoadResult | null> {
    return this.ledger.committed(target.environment, this.name, target.pipelineToken);
  }

  locations(): [] {
    return [];
  }

  async drop(): Promise<[]> {
    return [];
  }

  /** The earlier delivery's result (with the reader drained), or null when this job is new here. */
  protected async alreadyDelivered(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
  ): Promise<LoadResult | null> {
    const done = await this.committed(target);
    if (done) for await (const _ of payloads); // drain the reader so its files close
    return done;
  }

  /** Keeps refused rows as they come, in batches: nothing proportional to the input is held. */
  protected refusals(target: LoadTarget): Refusals {
    return new Refusals((rows) =>
      this.ledger.keepRejects(target.environment, this.name, target.pipeline, target.pipelineToken, rows),
    );
  }

  /**
   * Keeps the platform's rejects after the sink's own refusals, records the delivery, and answers
   * the load's result.
   */
  protected async finish(
    target: LoadTarget,
    loaded: number,
    refused: Refusals,
    rejects: () => AsyncIterable<RejectedRow>,
    location: string,
  ): Promise<LoadResult> {
    await refused.flush();
    const later = await this.ledger.keepRejects(
      target.environment,
      this.name,
      target.pipeline,
      target.pipelineToken,
      rejects(),
    );
    const result = { loaded, rejected: refused.count + later, location };
    await this.ledger.commit(target.environment, this.name, target.pipeline, target.pipelineToken, result);
    return { ...result, alreadyLoaded: false, rejectsLocation: SINK_REJECTS };
  }
}

/** A sink's own refused rows, written to the ledger 500 at a time. */
export class Refusals {
  count = 0;
  private pending: RejectedRow[] = [];

  constructor(private readonly keep: (rows: RejectedRow[]) => Promise<number>) {}

  async add(row: RejectedRow): Promise<void> {
    this.pending.push(row);
    this.count++;
    if (this.pending.length >= 500) await this.flush();
  }

  async flush(): Promise<void> {
    const rows = this.pending;
    this.pending = [];
    if (rows.length > 0) await this.keep(rows);
  }
}

/** The section a sink reads, or a 400 naming it. */
export function sectionOf<T>(destination: PipelineDefinition['destination'], key: string): T {
  const s = destination[key] as T | undefined | null;
  if (s === undefined || s === null) throw new ValidationError(`the pipeline has no destination.${key}`);
  return s;
}

export function withTimeout<T>(p: Promise<T>, ms: number, fail: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(fail()), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
