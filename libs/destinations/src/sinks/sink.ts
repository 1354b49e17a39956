import { Inject } from '@nestjs/common';
import { CONFIG, ServiceUnavailableError, TapyardConfig, ValidationError } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { SecretNotFoundError, SecretsService } from '@tapyard/secrets';
import { PipelineDefinition } from '@tapyard/model';
import { ProcessName } from '@tapyard/status';
import { Capabilities, EncoderName, LoadResult, LoadTarget, Payload, RejectedRow } from '../destination';
import { SINK_REJECTS, SinkLedger } from './sink-ledger';
import { DestinationErrorCode } from '../destination-errors';

/**
 * One job's time at a sink: `signal` aborts when the job's deadline there passes, and `call` bounds
 * each answer the sink waits for (a request, a connect, a broker's receipts) by the request timeout.
 */
export class Delivery {
  constructor(
    readonly signal: AbortSignal,
    private readonly sink: string,
    /** Names the sink and where it sends, for the timeout's message. */
    private readonly label: string,
    private readonly requestTimeoutMs: number,
  ) {}

  /**
   * `work`'s answer, or a ServiceUnavailableError naming the sink and the timeout when none comes
   * within `ms` (an outage, retried like one). `work` gets a signal that aborts then, or when the
   * job's deadline passes; a driver that ignores it is left behind, its outcome dropped.
   */
  async call<T>(
    what: string,
    work: (signal: AbortSignal) => Promise<T>,
    ms = this.requestTimeoutMs,
  ): Promise<T> {
    this.signal.throwIfAborted();
    const ctl = new AbortController();
    const follow = (): void => ctl.abort(this.signal.reason);
    this.signal.addEventListener('abort', follow, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      ctl.signal.addEventListener('abort', () => reject(ctl.signal.reason), { once: true });
      timer = setTimeout(
        () =>
          ctl.abort(
            new ServiceUnavailableError(
              this.sink,
              `${this.label}: no answer to ${what} within ${ms} ms (SINK_REQUEST_TIMEOUT_MS)`,
            ).coded(DestinationErrorCode.Unavailable),
          ),
        ms,
      );
    });
    try {
      const running = work(ctl.signal);
      running.catch(() => undefined);
      return await Promise.race([running, bound]);
    } finally {
      clearTimeout(timer);
      this.signal.removeEventListener('abort', follow);
    }
  }
}

/**
 * What every sink shares (REST, brokers, warehouses): its encoder's batches in, a delivery record per job
 * (a redelivery sends nothing), refused rows kept in the ledger, and nothing to take back on
 * deleteData: what was delivered is the receiver's. Every answer a sink waits for is bounded
 * (SINK_REQUEST_TIMEOUT_MS), and so is a job's whole set-up and delivery (SINK_LOAD_TIMEOUT_MS);.
 * The runner keeps jobs past SINK_CONCURRENCY in the queue (SinkGate) before they reach a sink.
 */
export abstract class Sink {
  abstract readonly name: string;
  abstract readonly processName: ProcessName;
  readonly capabilities: Capabilities = {
    exactlyOnce: true,
    schemaEvolution: true,
    maxBatchRows: null,
    csvPassThrough: false,
    retractable: false,
  };
  readonly encoder: EncoderName = 'typed';
  protected readonly bounds: TapyardConfig['sinks'];

  /** The operator's allow-list for the sink, every environment's entries: see policy(). */
  private readonly egress: EgressPolicy;

  /**
   * Every sink is built from the same three (Nest injects a subclass through this constructor);
   * `secrets`: its section names the secret holding its credentials.
   */
  constructor(
    @Inject(CONFIG) config: TapyardConfig,
    protected readonly secrets: SecretsService,
    protected readonly ledger: SinkLedger,
  ) {
    this.bounds = config.sinks;
    this.egress = this.egressPolicy(config);
  }

  /** The operator's allow-list of private endpoints this sink may reach (TAP_EGRESS_ALLOW unless overridden). */
  protected egressPolicy(config: TapyardConfig): EgressPolicy {
    return new EgressPolicy(config.egressAllow);
  }

  /**
   * Where the sink may connect on a pipeline's behalf (its address is the pipeline's choice): public
   * addresses, and the allow-list's entries of every environment or of the target's own.
   */
  protected policy(target: LoadTarget): EgressPolicy {
    return this.egress.for(target.environment);
  }

  abstract describe(destination: PipelineDefinition['destination']): string;

  /** Whether the sink's address answers at all, within one request timeout. */
  protected abstract reach(target: LoadTarget, d: Delivery): Promise<void>;

  /** What the load needs at the receiver (topics, tables), or a check of the credentials. */
  protected abstract ready(target: LoadTarget, d: Delivery): Promise<void>;

  /** Sends a job's rows, then finish(); a redelivery of a job already delivered never comes here. */
  protected abstract deliver(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
    d: Delivery,
  ): Promise<LoadResult>;

  async probe(target?: LoadTarget): Promise<void> {
    if (!target) return;
    await this.bounded(target, 'a probe', this.bounds.requestTimeoutMs, 'SINK_REQUEST_TIMEOUT_MS', (d) =>
      this.reach(target, d),
    );
  }

  prepare(target: LoadTarget): Promise<void> {
    return this.bounded(target, 'the preparation', this.bounds.loadTimeoutMs, 'SINK_LOAD_TIMEOUT_MS', (d) =>
      this.ready(target, d),
    );
  }

  async load(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<LoadResult> {
    const done = await this.alreadyDelivered(target, payloads);
    if (done) return done;
    return this.bounded(target, 'the delivery', this.bounds.loadTimeoutMs, 'SINK_LOAD_TIMEOUT_MS', (d) =>
      this.deliver(target, payloads, rejects, progress, d),
    );
  }

  /**
   * `work`'s result, or a ServiceUnavailableError naming the sink and the setting once `ms` pass: the
   * job ends (or is retried) and its worker slot is free even when a driver ignores the abort.
   */
  private async bounded<T>(
    target: LoadTarget,
    what: string,
    ms: number,
    setting: string,
    work: (d: Delivery) => Promise<T>,
  ): Promise<T> {
    const ctl = new AbortController();
    const label = this.label(target);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new ServiceUnavailableError(
          this.name,
          `${label}: ${what} did not finish within ${ms} ms (${setting})`,
        ).coded(DestinationErrorCode.Unavailable);
        ctl.abort(err);
        reject(err);
      }, ms);
    });
    try {
      const running = work(new Delivery(ctl.signal, this.name, label, this.bounds.requestTimeoutMs));
      running.catch(() => undefined);
      return await Promise.race([running, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private label(target: LoadTarget): string {
    return `${this.name} sink (${this.describe(target.destination)})`;
  }

  /** The fields of the secret the sink's section names; a missing one is the pipeline's mistake (400). */
  protected async sectionSecret(environment: string, secretName: string): Promise<Record<string, string>> {
    try {
      return await this.secrets.reveal(environment, secretName);
    } catch (err) {
      if (err instanceof SecretNotFoundError)
        throw new ValidationError(`secret '${secretName}' of destination.${this.name} does not exist`).coded(
          DestinationErrorCode.InvalidSecret,
        );
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
  private async alreadyDelivered(
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
   * the load's result. A delivery whose deadline passed records nothing: the job was told it failed.
   */
  protected async finish(
    target: LoadTarget,
    loaded: number,
    refused: Refusals,
    rejects: () => AsyncIterable<RejectedRow>,
    location: string,
    d: Delivery,
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
    d.signal.throwIfAborted();
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
  if (s === undefined || s === null)
    throw new ValidationError(`the pipeline has no destination.${key}`).coded(
      DestinationErrorCode.MissingSection,
    );
  return s;
}

/** Waits for a clean-up (a disconnect, an abort) at most `ms`, never failing: the outcome is decided. */
export async function cleanUp(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    p.catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}
