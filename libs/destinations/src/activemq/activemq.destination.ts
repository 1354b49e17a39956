import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';

import type { Client } from '@stomp/stompjs';
import { ServiceUnavailableError } from '@tapyard/core';
import { PipelineDefinition, TypedBatch } from '@tapyard/model';
import { Destination, LoadResult, LoadTarget, Payload, RejectedRow } from '../destination';
import { jsonRow } from '../sinks/json-rows';
import { Delivery, Sink, sectionOf } from '../sinks/sink';
import { typedBatch } from '../typed-rows';
import { ActiveMqTarget } from './section';
import { BrokerAddress, brokerOf, closeStomp, openStomp } from './stomp-session';
import { DestinationErrorCode } from '../destination-errors';

/** Messages in flight (sent, receipt not yet back) at most. */
const WINDOW = 500;

/**
 * ActiveMQLoader: one persistent JSON message per row to a queue or topic over STOMP, each with a
 * receipt that is awaited before the rows count as sent. Headers carry the pipeline, its token and the
 * row's line, and `tapyard-message-id: <pipelineToken>:<line>`. Delivery is at-least-once: a finished
 * job is recorded and never resent, but a delivery cut midway is retried whole, so consumers
 * deduplicate on `tapyard-message-id`. A window's receipts, like the connect, wait
 * SINK_REQUEST_TIMEOUT_MS at most.
 */
@Injectable()
export class ActiveMqDestination extends Sink implements Destination {
  readonly name = 'activemq';
  readonly processName = 'ActiveMQLoader' as const;

  describe(destination: PipelineDefinition['destination']): string {
    return `ActiveMQ ${targetOf(destination).destination}`;
  }

  protected async reach(target: LoadTarget): Promise<void> {
    const client = await openStomp(
      await this.broker(target),
      this.policy(target),
      this.bounds.requestTimeoutMs,
    );
    // It answered; the polite close (bounded, never failing) is not part of the probe's time.
    void closeStomp(client, this.bounds.requestTimeoutMs);
  }

  protected async ready(target: LoadTarget): Promise<void> {
    await this.broker(target);
  }

  protected async deliver(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
    d: Delivery,
  ): Promise<LoadResult> {
    const a = targetOf(target.destination);
    const client = await openStomp(
      await this.broker(target),
      this.policy(target),
      this.bounds.requestTimeoutMs,
    );
    // Receipts still awaited; a lost connection fails them all at once.
    const pending = new Map<string, { resolve: () => void; reject: (err: Error) => void }>();
    client.onWebSocketClose = () => {
      const err = new ServiceUnavailableError(
        'activemq',
        'the ActiveMQ broker connection closed before its receipts came',
      ).coded(DestinationErrorCode.Unavailable);
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    };
    let sent = 0;
    try {
      let inFlight: Promise<void>[] = [];
      const settle = async (): Promise<void> => {
        const window = inFlight;
        await d.call('the receipts of its messages', () => Promise.all(window));
        sent += inFlight.length;
        inFlight = [];
        progress(sent);
      };
      for await (const payload of payloads) {
        const b = typedBatch(payload);
        for (let i = 0; i < b.lines.length; i++) {
          inFlight.push(this.publish(client, pending, a.destination, target, b, i));
          if (inFlight.length >= WINDOW) await settle();
        }
      }
      await settle();
    } finally {
      await closeStomp(client, this.bounds.requestTimeoutMs);
    }
    return this.finish(target, sent, this.refusals(target), rejects, `ActiveMQ ${a.destination}`, d);
  }

  /** Resolves when the broker's receipt for the message arrives (it has then stored it). */
  private publish(
    client: Client,
    pending: Map<string, { resolve: () => void; reject: (err: Error) => void }>,
    destination: string,
    target: LoadTarget,
    b: TypedBatch,
    i: number,
  ): Promise<void> {
    if (!client.connected) {
      return Promise.reject(
        new ServiceUnavailableError(
          'activemq',
          'the ActiveMQ broker connection was lost before all rows were sent',
        ).coded(DestinationErrorCode.Unavailable),
      );
    }
    const receipt = randomUUID();
    const done = new Promise<void>((resolve, reject) => pending.set(receipt, { resolve, reject }));
    // A window given up midway (a timeout, a read failure) is failed when the connection closes.
    done.catch(() => undefined);
    client.watchForReceipt(receipt, () => {
      pending.get(receipt)?.resolve();
      pending.delete(receipt);
    });
    client.publish({
      destination,
      body: jsonRow(b, i),
      headers: {
        receipt,
        persistent: 'true',
        'content-type': 'application/json',
        'tapyard-pipeline': target.pipeline,
        'tapyard-pipeline-token': target.pipelineToken,
        ...(target.publisherToken ? { 'tapyard-publisher-token': target.publisherToken } : {}),
        'tapyard-row': String(b.lines[i]),
        'tapyard-message-id': `${target.pipelineToken}:${b.lines[i]}`,
      },
    });
    return done;
  }

  private async broker(target: LoadTarget): Promise<BrokerAddress> {
    const a = targetOf(target.destination);
    return brokerOf(a.secretName, await this.sectionSecret(target.environment, a.secretName));
  }
}

function targetOf(destination: PipelineDefinition['destination']): ActiveMqTarget {
  return sectionOf<ActiveMqTarget>(destination, 'activemq');
}
