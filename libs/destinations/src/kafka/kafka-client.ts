import { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { Kafka, SASLOptions } from 'kafkajs';
import { ValidationError } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { DestinationErrorCode } from '../destination-errors';

export type KafkaSdk = typeof import('kafkajs');

/** KafkaJS, loaded by the first use of a Kafka destination: a process that never loads there never pays for it. */
export function kafkaSdk(): Promise<KafkaSdk> {
  return import('kafkajs');
}

export interface KafkaSettings {
  brokers: string[];
  ssl: boolean;
  sasl: SASLOptions | undefined;
}

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
  if (!['plain', 'scram-sha-256', 'scram-sha-512'].includes(mechanism)) {
    throw new ValidationError(
      `secret '${secretName}' mechanism must be plain, scram-sha-256 or scram-sha-512`,
    ).coded(DestinationErrorCode.InvalidSecret);
  }
  const sasl = fields.username
    ? ({ mechanism, username: fields.username, password: fields.password ?? '' } as SASLOptions)
    : undefined;
  return { brokers, ssl: fields.ssl === 'true', sasl };
}

/**
 * A KafkaJS client whose every connection (the bootstrap brokers and each leader the cluster names
 * later) goes to an address the egress policy vetted: a private one only when TAP_EGRESS_ALLOW lists it.
 * A connect and each request wait `timeoutMs` at most (SINK_REQUEST_TIMEOUT_MS).
 */
export function kafkaClient(
  sdk: KafkaSdk,
  s: KafkaSettings,
  policy: EgressPolicy,
  clientId: string,
  timeoutMs: number,
): Kafka {
  return new sdk.Kafka({
    clientId,
    brokers: s.brokers,
    ssl: s.ssl,
    sasl: s.sasl,
    connectionTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    enforceRequestTimeout: true,
    retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 3000 },
    logLevel: sdk.logLevel.NOTHING,
    socketFactory: ({ host, port, ssl, onConnect }) => {
      const raw = new Socket();
      policy.check(host, port).then(
        (permit) => raw.connect({ host: permit.address, port }),
        (err: Error) => raw.destroy(err),
      );
      if (!ssl) {
        raw.once('connect', onConnect);
        return raw;
      }
      const options = typeof ssl === 'object' ? ssl : {};
      return tlsConnect({ ...options, socket: raw, servername: host }, onConnect);
    },
  });
}
