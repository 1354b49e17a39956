import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';

import type { BaseOptions, MessageToProduce, Partitioner, Producer } from '@platformatic/kafka';
import { ServiceUnavailableError, ValidationError, errorMessage } from '@tapyard/core';
import { EgressRefused } from '@tapyard/egress';
import { PipelineDefinition } from '@tapyard/model';
import { Destination, LoadResult, LoadTarget, Payload, RejectedRow } from '../destination';
import { fieldText } from '../encoders/json-rows';
import { jsonRows, jsonRowBytes, jsonRowText } from '../sinks/json-rows';
import { Delivery, Sink, cleanUp, sectionOf } from '../sinks/sink';
import { KafkaSdk, KafkaSettings, kafkaOptions, kafkaSdk, kafkaSettings } from './kafka-client';
import { KafkaTarget } from './section';
import { DestinationErrorCode } from '../destination-errors';

/** Messages per produce request inside the job's transaction. */
const BATCH = 1000;

/** The names of the headers each message carries, encoded once. */
const HEADER = {
  pipeline: Buffer.from('tapyard-pipeline'),
  token: Buffer.from('tapyard-pipeline-token'),
  row: Buffer.from('tapyard-row'),
  messageId: Buffer.from('tapyard-message-id'),
  publisher: Buffer.from('tapyard-publisher-token'),
};

/** The brokers' default `transaction.max.timeout.ms`: a longer transaction timeout is refused. */
const MAX_TRANSACTION_MS = 900_000;

/**
 * KafkaLoader: one JSON message per row (key from `keyColumn`), GZIP-compressed, headers
 * `tapyard-pipeline`, `tapyard-pipeline-token`, `tapyard-publisher-token`, `tapyard-row`,
 * `tapyard-message-id`. The whole job is one transaction of an idempotent producer whose
 * transactional id is the job's: read_committed consumers see every row of a job or none, a delivery
 * cut midway is aborted (a redelivery's producer fences it), and a committed job is recorded and
 * never sent again. Connecting, each produce request and the commit wait SINK_REQUEST_TIMEOUT_MS at
 * most (the client's own retries included). The client is @platformatic/kafka (docs/destinations.md
 * says why); every broker connection it makes passes the egress policy (kafka-client.ts).
 */
@Injectable()
export class KafkaDestination extends Sink implements Destination {
  readonly name = 'kafka';
  readonly processName = 'KafkaLoader' as const;
  override readonly encoder = 'json-rows';

  describe(destination: PipelineDefinition['destination']): string {
    return `Kafka topic ${targetOf(destination).topic}`;
  }

  protected async reach(target: LoadTarget, d: Delivery): Promise<void> {
    const settings = await this.settings(target);
    const sdk = await kafkaSdk();
    // One retry: a probe says at once whether the brokers answer (each delivery starts with one, and the
    // runner's own retries wait out an outage); the delivery's clients keep three for a leader moving.
    const admin = new sdk.Admin(this.options(target, sdk, settings, 'tapyard-probe', 1));
    try {
      await d.call('a metadata request', () => admin.metadata({ topics: [] }));
    } catch (err) {
      throw outage(settings, err);
    } finally {
      await cleanUp(admin.close(), this.bounds.requestTimeoutMs);
    }
  }

  /** Creates the topic when missing (partitions and replicas as the cluster configures). */
  protected async ready(target: LoadTarget, d: Delivery): Promise<void> {
    const settings = await this.settings(target);
    const sdk = await kafkaSdk();
    const admin = new sdk.Admin(this.options(target, sdk, settings, 'tapyard-prepare'));
    const topic = targetOf(target.destination).topic;
    try {
      if (!(await d.call('listTopics', () => admin.listTopics())).includes(topic)) {
        try {
          await d.call('createTopics', () => admin.createTopics({ topics: [topic] }));
        } catch (err) {
          // Another job (or worker) made it meanwhile.
          if (!hasKafkaError(err, 'TOPIC_ALREADY_EXISTS')) throw err;
        }
      }
      // A just-created topic may have no leader yet: the first produce request would wait for one.
      for (let attempt = 1; ; attempt++) {
        const metadata = await d.call('a metadata request', () =>
          admin.metadata({ topics: [topic], forceUpdate: true }),
        );
        const partitions = metadata.topics.get(topic)?.partitions ?? [];
        if (partitions.length > 0 && partitions.every((p) => p.leader >= 0)) break;
        if (attempt >= 10) throw new Error(`the topic ${topic} has no leader for every partition yet`);
        await sleep(100 * attempt, undefined, { signal: d.signal });
      }
    } catch (err) {
      throw err instanceof ValidationError ? err : outage(settings, err);
    } finally {
      await cleanUp(admin.close(), this.bounds.requestTimeoutMs);
    }
  }

  protected async deliver(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
    d: Delivery,
  ): Promise<LoadResult> {
    const k = targetOf(target.destination);
    const settings = await this.settings(target);
    const sdk = await kafkaSdk();
    const keyAt = k.keyColumn ? target.columns.findIndex((c) => c.name === k.keyColumn) : -1;
    if (k.keyColumn && keyAt < 0)
      throw new ValidationError(`keyColumn '${k.keyColumn}' is not a column of the pipeline`).coded(
        DestinationErrorCode.LoadRefused,
      );
    const producer: KafkaProducer = new sdk.Producer({
      ...this.options(target, sdk, settings, 'tapyard-loader'),
      idempotent: true,
      transactionalId: `tapyard-${target.environment}-${target.pipelineToken}`,
      // Sent as the transaction's timeout too: the coordinator aborts a transaction open longer.
      timeout: Math.min(this.bounds.loadTimeoutMs, MAX_TRANSACTION_MS),
      compression: k.compression ?? 'gzip',
      partitioner: keyPartitioner(sdk),
      // Header names and values go as bytes (the library's default): the job's own are encoded once.
      serializers: { key: sdk.stringSerializer },
    });
    let sent = 0;
    try {
      // A new producer asks for its id with none (-1, -1): the library's default (0, 0) claims to be
      // producer 0's next epoch, which the coordinator refuses (PRODUCER_FENCED) once the job's
      // transactional id has a producer, i.e. exactly on a redelivery that must fence the earlier one.
      const tx = await d.call('a transaction', () =>
        producer.beginTransaction({ producerId: -1n, producerEpoch: -1 }),
      );
      try {
        let messages: KafkaMessage[] = [];
        const flush = async (): Promise<void> => {
          if (messages.length === 0) return;
          const batch = messages;
          await d.call('a produce request', () => tx.send({ messages: batch }));
          sent += messages.length;
          messages = [];
          progress(sent);
        };
        const topic = k.topic;
        const token = target.pipelineToken;
        const pipeline = Buffer.from(target.pipeline);
        const tokenBytes = Buffer.from(token);
        const publisher = target.publisherToken ? Buffer.from(target.publisherToken) : null;
        for await (const payload of payloads) {
          const b = jsonRows(payload);
          for (let i = 0; i < b.ends.length; i++) {
            const line = String(b.lines[i]);
            const headers = new Map<Buffer, Buffer>([
              [HEADER.pipeline, pipeline],
              [HEADER.token, tokenBytes],
              [HEADER.row, Buffer.from(line)],
              [HEADER.messageId, Buffer.from(`${token}:${line}`)],
            ]);
            if (publisher) headers.set(HEADER.publisher, publisher);
            // The row's bytes as they came from the stage thread (a view), framed into the request as they are.
            const key = keyAt >= 0 ? (keyText(jsonRowText(b, i), keyAt) ?? undefined) : undefined;
            messages.push({ topic, key, value: jsonRowBytes(b, i), headers });
            if (messages.length >= BATCH) await flush();
          }
        }
        await flush();
        await d.call('the commit', () => tx.commit());
      } catch (err) {
        // Bounded on its own: the job's deadline may be what ended the delivery.
        await cleanUp(tx.abort(), this.bounds.requestTimeoutMs);
        throw err;
      }
    } catch (err) {
      throw err instanceof ValidationError ? err : outage(settings, err);
    } finally {
      await cleanUp(producer.close(true), this.bounds.requestTimeoutMs);
    }
    return this.finish(target, sent, this.refusals(target), rejects, `Kafka topic ${k.topic}`, d);
  }

  private options(
    target: LoadTarget,
    sdk: KafkaSdk,
    settings: KafkaSettings,
    clientId: string,
    retries?: number,
  ): BaseOptions {
    const policy = this.policy(target);
    return kafkaOptions(sdk, settings, policy, clientId, this.bounds.requestTimeoutMs, retries);
  }

  private async settings(target: LoadTarget): Promise<KafkaSettings> {
    const k = targetOf(target.destination);
    return kafkaSettings(k.secretName, await this.sectionSecret(target.environment, k.secretName));
  }
}

type KafkaProducer = Producer<string, Buffer, Buffer, Buffer>;
type KafkaMessage = MessageToProduce<string, Buffer, Buffer, Buffer>;

/**
 * Keys partitioned as the Java client (and KafkaJS before) does, murmur2 masked positive, so a key
 * keeps its partition; keyless messages round robin.
 */
function keyPartitioner(sdk: KafkaSdk): Partitioner<string, Buffer, Buffer, Buffer> {
  let next = 0;
  return (message, key) => (key ? sdk.compatibilityPartitioner(message, key) : next++ & 0x7fffffff);
}

/** Whether the client's error (or one it wraps) is the broker's `id` (e.g. TOPIC_ALREADY_EXISTS). */
function hasKafkaError(err: unknown, id: string): boolean {
  return leaves(err).some((e) => (e as { apiId?: unknown }).apiId === id);
}

/** The errors a client error wraps (the library nests them: "Cannot connect to any broker." → each try). */
function leaves(err: unknown, depth = 0): unknown[] {
  if (depth > 6 || !err) return [err];
  if (err instanceof AggregateError && err.errors.length > 0)
    return err.errors.flatMap((e: unknown) => leaves(e, depth + 1));
  const cause = (err as { cause?: unknown }).cause;
  return cause ? [err, ...leaves(cause, depth + 1)] : [err];
}

/** A client failure as an outage naming Kafka and the brokers; a refused address is the caller's mistake. */
function outage(s: KafkaSettings, err: unknown): Error {
  const all = leaves(err);
  const refused = all.find((e) => e instanceof EgressRefused);
  if (refused)
    return new ValidationError(`the Kafka broker is not allowed: ${refused.message}`).coded(
      DestinationErrorCode.EndpointRefused,
    );
  // The innermost words say what happened (ECONNREFUSED, the broker's error code), each once.
  const words = [...new Set(all.filter((e) => !(e instanceof AggregateError)).map((e) => errorMessage(e)))];
  return new ServiceUnavailableError(
    'kafka',
    `the Kafka brokers ${s.brokers.join(',')} are unavailable: ${words.join('; ').slice(0, 300)}`,
  ).coded(DestinationErrorCode.Unavailable);
}

/** The key column's value as text (as String() writes it: a string as itself), or null. */
function keyText(row: string, column: number): string | null {
  const text = fieldText(row, column);
  if (text === 'null') return null;
  return text.charCodeAt(0) === 0x22 ? (JSON.parse(text) as string) : text;
}

function targetOf(destination: PipelineDefinition['destination']): KafkaTarget {
  return sectionOf<KafkaTarget>(destination, 'kafka');
}
