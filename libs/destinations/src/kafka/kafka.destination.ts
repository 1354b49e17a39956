import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Kafka, Message } from 'kafkajs';
import { ServiceUnavailableError, ValidationError, errorMessage } from '@tapyard/core';
import { EgressRefused } from '@tapyard/egress';
import { PipelineDefinition } from '@tapyard/model';
import { Destination, LoadResult, LoadTarget, Payload, RejectedRow } from '../destination';
import { fieldText } from '../encoders/json-rows';
import { jsonRows, jsonRowBytes, jsonRowText } from '../sinks/json-rows';
import { Delivery, Sink, cleanUp, sectionOf } from '../sinks/sink';
import { KafkaSdk, KafkaSettings, kafkaClient, kafkaSdk, kafkaSettings } from './kafka-client';
import { KafkaTarget } from './section';
import { DestinationErrorCode } from '../destination-errors';

/** Messages per produce request inside the job's transaction. */
const BATCH = 1000;

/**
 * KafkaLoader: one JSON message per row (key from `keyColumn`), GZIP-compressed, headers
 * `tapyard-pipeline`, `tapyard-pipeline-token`, `tapyard-publisher-token`, `tapyard-row`,
 * `tapyard-message-id`. The whole job is one transaction of an idempotent producer whose
 * transactional id is the job's: read_committed consumers see every row of a job or none, a delivery
 * cut midway is aborted (a redelivery's producer fences it), and a committed job is recorded and
 * never sent again. Connecting, each produce request and the commit wait SINK_REQUEST_TIMEOUT_MS at
 * most (KafkaJS's own retries included).
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
    const admin = this.client(sdk, settings, 'tapyard-probe').admin();
    try {
      await d.call('a connect', () => admin.connect());
      await d.call('describeCluster', () => admin.describeCluster());
    } catch (err) {
      throw outage(sdk, settings, err);
    } finally {
      await cleanUp(admin.disconnect(), this.bounds.requestTimeoutMs);
    }
  }

  /** Creates the topic when missing (one partition per broker default, as the cluster configures). */
  protected async ready(target: LoadTarget, d: Delivery): Promise<void> {
    const settings = await this.settings(target);
    const sdk = await kafkaSdk();
    const admin = this.client(sdk, settings, 'tapyard-prepare').admin();
    try {
      await d.call('a connect', () => admin.connect());
      const topic = targetOf(target.destination).topic;
      if (!(await d.call('listTopics', () => admin.listTopics())).includes(topic)) {
        // A just-started KRaft broker may not know a new topic's leader yet: asked again, it does.
        for (let attempt = 1; ; attempt++) {
          try {
            await d.call('createTopics', () =>
              admin.createTopics({ topics: [{ topic }], waitForLeaders: true }),
            );
            break;
          } catch (err) {
            if (
              attempt >= 5 ||
              d.signal.aborted ||
              !/UNKNOWN_TOPIC_OR_PARTITION|already exists|leader/i.test(errorMessage(err))
            )
              throw err;
            await sleep(300 * attempt, undefined, { signal: d.signal });
          }
        }
      }
    } catch (err) {
      throw err instanceof ValidationError ? err : outage(sdk, settings, err);
    } finally {
      await cleanUp(admin.disconnect(), this.bounds.requestTimeoutMs);
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
    const kafka: Kafka = this.client(sdk, settings, 'tapyard-loader');
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      transactionalId: `tapyard-${target.environment}-${target.pipelineToken}`,
    });
    let sent = 0;
    try {
      await d.call('a connect', () => producer.connect());
      const tx = await d.call('a transaction', () => producer.transaction());
      try {
        const keyAt = k.keyColumn ? target.columns.findIndex((c) => c.name === k.keyColumn) : -1;
        if (k.keyColumn && keyAt < 0)
          throw new ValidationError(`keyColumn '${k.keyColumn}' is not a column of the pipeline`).coded(
            DestinationErrorCode.LoadRefused,
          );
        let messages: Message[] = [];
        const flush = async (): Promise<void> => {
          if (messages.length === 0) return;
          const batch = messages;
          await d.call('a produce request', () =>
            tx.send({ topic: k.topic, compression: sdk.CompressionTypes.GZIP, messages: batch }),
          );
          sent += messages.length;
          messages = [];
          progress(sent);
        };
        const pipeline = target.pipeline;
        const token = target.pipelineToken;
        const publisher = target.publisherToken;
        for await (const payload of payloads) {
          const b = jsonRows(payload);
          for (let i = 0; i < b.ends.length; i++) {
            const line = String(b.lines[i]);
            const headers: Record<string, string> = {
              'tapyard-pipeline': pipeline,
              'tapyard-pipeline-token': token,
              'tapyard-row': line,
              'tapyard-message-id': `${token}:${line}`,
            };
            if (publisher) headers['tapyard-publisher-token'] = publisher;
            // The row's bytes as they came from the stage thread (a view): KafkaJS copies them once.
            const key = keyAt >= 0 ? keyText(jsonRowText(b, i), keyAt) : null;
            messages.push({ key, value: jsonRowBytes(b, i), headers });
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
      throw err instanceof ValidationError ? err : outage(sdk, settings, err);
    } finally {
      await cleanUp(producer.disconnect(), this.bounds.requestTimeoutMs);
    }
    return this.finish(target, sent, this.refusals(target), rejects, `Kafka topic ${k.topic}`, d);
  }

  private client(sdk: KafkaSdk, settings: KafkaSettings, clientId: string): Kafka {
    return kafkaClient(sdk, settings, this.policy, clientId, this.bounds.requestTimeoutMs);
  }

  private async settings(target: LoadTarget): Promise<KafkaSettings> {
    const k = targetOf(target.destination);
    return kafkaSettings(k.secretName, await this.sectionSecret(target.environment, k.secretName));
  }
}

/** A client failure as an outage naming Kafka and the brokers; a refused address is the caller's mistake. */
function outage(sdk: KafkaSdk, s: KafkaSettings, err: unknown): Error {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof EgressRefused)
      return new ValidationError(`the Kafka broker is not allowed: ${e.message}`).coded(
        DestinationErrorCode.EndpointRefused,
      );
    if (e instanceof sdk.KafkaJSError && (e as { originalError?: unknown }).originalError) {
      const inner = (e as { originalError?: unknown }).originalError;
      if (inner instanceof EgressRefused)
        return new ValidationError(`the Kafka broker is not allowed: ${inner.message}`).coded(
          DestinationErrorCode.EndpointRefused,
        );
    }
  }
  return new ServiceUnavailableError(
    'kafka',
    `the Kafka brokers ${s.brokers.join(',')} are unavailable: ${errorMessage(err).slice(0, 300)}`,
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
