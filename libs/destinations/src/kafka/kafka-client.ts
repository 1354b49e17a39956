import { channel } from 'node:diagnostics_channel';
import type { LookupFunction } from 'node:net';
import type {
  BaseOptions,
  Broker,
  Callback,
  Connection,
  ConnectionPool,
  SASLOptions,
} from '@platformatic/kafka';
import { ValidationError } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { DestinationErrorCode } from '../destination-errors';

export type KafkaSdk = typeof import('@platformatic/kafka');

/**
 * @platformatic/kafka, loaded by the first use of a Kafka destination: a process that never loads
 * there never pays for it.
 */
export async function kafkaSdk(): Promise<KafkaSdk> {
  const sdk = await import('@platformatic/kafka');
  watchPools();
  return sdk;
}

export interface KafkaSettings {
  brokers: string[];
  ssl: boolean;
  sasl: SASLOptions | undefined;
}

const MECHANISMS = {
  plain: 'PLAIN',
  'scram-sha-256': 'SCRAM-SHA-256',
  'scram-sha-512': 'SCRAM-SHA-512',
} as const;

export function kafkaSettings(secretName: string, fields: Record<string, string>): KafkaSettings {
  const brokers = (fields.brokers ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
  if (brokers.length === 0 || brokers.some((b) => !/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(b))) {
    throw new ValidationError(`secret '${secretName}' needs 'brokers' as host:port,host:port`).coded(
      DestinationErrorCode.InvalidSecret,
    );
  }
  const mechanism = (fields.mechanism ?? 'plain').toLowerCase();
  if (!(mechanism in MECHANISMS)) {
    throw new ValidationError(
      `secret '${secretName}' mechanism must be plain, scram-sha-256 or scram-sha-512`,
    ).coded(DestinationErrorCode.InvalidSecret);
  }
  const sasl = fields.username
    ? {
        mechanism: MECHANISMS[mechanism as keyof typeof MECHANISMS],
        username: fields.username,
        password: fields.password ?? '',
      }
    : undefined;
  return { brokers, ssl: fields.ssl === 'true', sasl };
}

/**
 * What a client of the sink carries as its `context`, which the library hands to every connection pool
 * the client makes: the egress check each broker connection passes first (see watchPools), and for
 * TLS the address each checked name was pinned to.
 */
class EgressGate {
  readonly pinned = new Map<string, { address: string; family: 4 | 6 }>();
  constructor(
    private readonly sdk: KafkaSdk,
    readonly policy: EgressPolicy,
    readonly tls: boolean,
  ) {}

  /** TLS connections keep the broker's name (SNI, certificate check) and connect to the vetted address. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    const pin = this.pinned.get(hostname);
    if (!pin) {
      callback(new Error(`${hostname} was not checked by the egress policy`), '', 4);
      return;
    }
    if (options.all) (callback as (e: null, all: { address: string; family: number }[]) => void)(null, [pin]);
    else callback(null, pin.address, pin.family);
  };

  /** `get` of a pool whose every connection (bootstrap brokers, leaders, coordinators) is vetted first. */
  guard(pool: ConnectionPool): void {
    const get = pool.get.bind(pool) as (broker: Broker, callback: Callback<Connection>) => void;
    const guarded = (broker: Broker, callback: Callback<Connection>): void => {
      if (broker?.host == null || broker.port == null) return get(broker, callback);
      this.policy.check(broker.host, broker.port).then(
        (permit) => {
          if (this.tls) {
            this.pinned.set(broker.host, { address: permit.address, family: permit.family });
            get(broker, callback);
          } else {
            // Keyed by the address in the pool: a name that re-resolves elsewhere is checked again.
            get({ host: permit.address, port: broker.port }, callback);
          }
        },
        // As the library's own error that says not to retry: asking again gets the same answer.
        (err: Error) => callback(new this.sdk.UserError(err.message, { cause: err })),
      );
    };
    pool.get = ((broker: Broker, callback?: Callback<Connection>) => {
      if (callback) return guarded(broker, callback);
      return new Promise<Connection>((resolve, reject) =>
        guarded(broker, (err, connection) => (err ? reject(err) : resolve(connection as Connection))),
      );
    }) as ConnectionPool['get'];
  }
}

let watching = false;

/**
 * The library connects with `net.createConnection` to whatever host the cluster's metadata names and
 * has no socket factory; it does announce every connection pool it creates on its diagnostics channel
 * `plt:kafka:instances`, before the pool's first connection. The pools of the sink's clients (their
 * context is an EgressGate) get a `get` that passes the egress policy first.
 */
function watchPools(): void {
  if (watching) return;
  watching = true;
  channel('plt:kafka:instances').subscribe((message) => {
    const { type, instance } = message as { type: string; instance: ConnectionPool };
    if (type === 'connection-pool' && instance.context instanceof EgressGate)
      instance.context.guard(instance);
  });
}

/**
 * The options of a client whose every connection goes to an address the egress policy vetted: a private
 * one only when TAP_EGRESS_ALLOW lists it. A connect and each request wait `timeoutMs` at most
 * (SINK_REQUEST_TIMEOUT_MS), with `retries` retries (three by default). The library nests them (an
 * operation's retries each retry the version handshake under it), so a broker that refuses every
 * connection is reported after (1 + retries)² connects: 16 and ~7 s at three, 4 and ~0.6 s at one.
 */
export function kafkaOptions(
  sdk: KafkaSdk,
  s: KafkaSettings,
  policy: EgressPolicy,
  clientId: string,
  timeoutMs: number,
  retries = 3,
): BaseOptions {
  const gate = new EgressGate(sdk, policy, s.ssl);
  return {
    clientId,
    bootstrapBrokers: s.brokers,
    context: gate,
    connectTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    retries,
    retryDelay: (_client, _op, attempt) => Math.min(200 * 2 ** (attempt - 1), 3000),
    ...(s.ssl ? { tls: { lookup: gate.lookup } } : {}),
    ...(s.sasl ? { sasl: s.sasl } : {}),
  };
}
