import { Injectable } from '@nestjs/common';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

import { ServiceUnavailableError, TapyardConfig, ValidationError, errorMessage } from '@tapyard/core';
import { EgressPolicy, EgressRefused, EgressResponse, egressRequest } from '@tapyard/egress';
import { PipelineDefinition } from '@tapyard/model';
import { Destination, LoadResult, LoadTarget, Payload, RejectedRow } from '../destination';
import { Delivery, Sink, sectionOf } from '../sinks/sink';
import { jsonRows, jsonRowText } from '../sinks/json-rows';
import { RowRun, restBody } from './rest-body';
import { REST_CONCURRENCY, RestTarget } from './section';
import { DestinationErrorCode } from '../destination-errors';

const gzipped = promisify(gzip);

/** Attempts per batch on 429, 5xx and connection failures, with back-off honouring Retry-After. */
const ATTEMPTS = 4;
const MAX_WAIT_MS = 30_000;

interface Pending {
  runs: RowRun[];
  rows: number;
}

/**
 * RestEndpointRunner: POSTs (or PUTs) batches of rows to an HTTP endpoint. Every request carries
 * `Idempotency-Key: <pipelineToken>:<batch>` (batches are cut the same way on every delivery), so a
 * redelivery after a partial failure resends the same keys: at-least-once, effectively once for a
 * receiver that honours the key. A finished delivery is recorded and never repeated. A batch the
 * endpoint refuses for good (4xx) becomes rejected rows with the status; 429/5xx and connection
 * failures, and requests unanswered within SINK_REQUEST_TIMEOUT_MS, are retried with back-off, then
 * the delivery fails as an outage (retried by the runner). The address passes the egress policy with
 * REST_SINK_ALLOW; redirects are never followed.
 */
@Injectable()
export class RestDestination extends Sink implements Destination {
  readonly name = 'rest';
  readonly processName = 'RestEndpointRunner' as const;
  override readonly encoder = 'json-rows';
  /** REST endpoints are the operator's REST_SINK_ALLOW, not the general egress list. */
  protected override egressPolicy(config: TapyardConfig): EgressPolicy {
    return new EgressPolicy(config.restSinkAllow, undefined, 'REST_SINK_ALLOW');
  }

  describe(destination: PipelineDefinition['destination']): string {
    const r = targetOf(destination);
    return `${r.method} ${safeUrl(r.url)}`;
  }

  /** Whether the endpoint answers HTTP at all (a HEAD request: any status will do, no rows are sent). */
  protected async reach(target: LoadTarget, d: Delivery): Promise<void> {
    const r = targetOf(target.destination);
    await this.vet(target, new URL(r.url));
    try {
      await d.call('HEAD', (signal) =>
        egressRequest(this.policy(target), r.url, { method: 'HEAD', maxBytes: 0, signal }),
      );
    } catch (err) {
      if (err instanceof ServiceUnavailableError) throw err;
      if (/redirect/.test(errorMessage(err))) return; // it answered
      throw new ServiceUnavailableError(
        'rest',
        `the REST endpoint ${safeUrl(r.url)} is unreachable: ${errorMessage(err)}`,
      ).coded(DestinationErrorCode.Unavailable);
    }
  }

  protected async ready(target: LoadTarget): Promise<void> {
    await this.authHeaders(target.environment, targetOf(target.destination));
  }

  protected async deliver(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
    d: Delivery,
  ): Promise<LoadResult> {
    const r = targetOf(target.destination);
    const headers = {
      ...(await this.authHeaders(target.environment, r)),
      'content-type': r.format === 'ndjson' ? 'application/x-ndjson' : 'application/json',
      ...(r.compression === 'gzip' ? { 'content-encoding': 'gzip' } : {}),
      'x-tapyard-pipeline': target.pipeline,
      'x-tapyard-pipeline-token': target.pipelineToken,
      ...(target.publisherToken ? { 'x-tapyard-publisher-token': target.publisherToken } : {}),
    };
    const url = new URL(r.url);
    await this.vet(target, url);
    // Above 1, batches may arrive out of order; at 1 each waits for the last one's answer.
    const inFlightMax = r.concurrency ?? REST_CONCURRENCY;
    // One job's batches share up to that many connections, closed when the delivery ends.
    const agent = new (url.protocol === 'https:' ? HttpsAgent : HttpAgent)({
      keepAlive: true,
      maxSockets: inFlightMax,
    });
    let loaded = 0;
    const refused = this.refusals(target);
    let batchNo = 0;
    let pending: Pending = { runs: [], rows: 0 };
    const inFlight = new Set<Promise<void>>();
    // The first batch that could not be delivered: the delivery stops there and fails with it.
    let failure: { reason: unknown } | null = null;
    const sendOne = async (batch: Pending, key: string): Promise<void> => {
      const rows = restBody(batch.runs, r.format === 'ndjson' ? 'ndjson' : 'json');
      // Compressed once (in libuv's pool, off this thread), the same bytes on every attempt.
      const body = r.compression === 'gzip' ? [await gzipped(Buffer.concat(rows))] : rows;
      const outcome = await this.post(target, r, { ...headers, 'idempotency-key': key }, body, agent, d);
      if (outcome === null) {
        loaded += batch.rows;
        progress(loaded);
        return;
      }
      for (const { payload, from, to } of batch.runs) {
        for (let i = from; i < to; i++) {
          const raw = jsonRowText(payload, i);
          await refused.add({
            line: payload.lines[i],
            stage: this.processName,
            reason: outcome,
            raw: raw.length > 1000 ? raw.slice(0, 1000) : raw,
          });
        }
      }
    };
    // Batches are cut by row count, whatever the payloads: a redelivery sends the same keys.
    const send = async (): Promise<void> => {
      if (pending.rows === 0) return;
      const batch = pending;
      pending = { runs: [], rows: 0 };
      const sending: Promise<void> = sendOne(batch, `${target.pipelineToken}:${batchNo++}`).then(
        () => void inFlight.delete(sending),
        (err: unknown) => {
          inFlight.delete(sending);
          failure ??= { reason: err };
        },
      );
      inFlight.add(sending);
      if (inFlight.size >= inFlightMax) await Promise.race(inFlight);
    };
    try {
      for await (const payload of payloads) {
        const b = jsonRows(payload);
        for (let i = 0; i < b.ends.length && failure === null;) {
          const to = Math.min(b.ends.length, i + r.batchSize - pending.rows);
          pending.runs.push({ payload: b, from: i, to });
          pending.rows += to - i;
          i = to;
          if (pending.rows >= r.batchSize) await send();
        }
        if (failure !== null) break;
      }
      if (failure === null) await send();
    } catch (err) {
      failure ??= { reason: err };
    }
    // Nothing is left travelling once the delivery answers, whatever its outcome.
    await Promise.all(inFlight);
    agent.destroy();
    if (failure !== null) throw (failure as { reason: unknown }).reason;
    return this.finish(target, loaded, refused, rejects, `${r.method} ${safeUrl(r.url)}`, d);
  }

  /** null when the endpoint took the batch; the reason when it refused it for good (the rows are rejects). */
  private async post(
    target: LoadTarget,
    r: RestTarget,
    headers: Record<string, string>,
    body: Buffer[],
    agent: HttpAgent,
    d: Delivery,
  ): Promise<string | null> {
    let last = '';
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      let res: EgressResponse;
      try {
        res = await d.call(r.method, (signal) =>
          egressRequest(this.policy(target), r.url, {
            method: r.method,
            headers,
            body,
            maxBytes: 4096,
            signal,
            agent,
          }),
        );
      } catch (err) {
        if (err instanceof EgressRefused)
          throw new ValidationError(`the REST endpoint is not allowed: ${err.message}`).coded(
            DestinationErrorCode.EndpointRefused,
          );
        // The job's deadline passed: no further attempt.
        if (d.signal.aborted) throw d.signal.reason;
        const message = errorMessage(err);
        if (/redirect/.test(message)) return `the endpoint answered with a redirect, which is not followed`;
        last =
          err instanceof ServiceUnavailableError
            ? message
            : `the REST endpoint ${safeUrl(r.url)} is unreachable: ${message}`;
        if (attempt < ATTEMPTS) await sleep(backoff(attempt), undefined, { signal: d.signal });
        continue;
      }
      const status = res.status;
      if (status >= 200 && status < 300) return null;
      if (status === 429 || status >= 500 || status === 408) {
        last = `the REST endpoint ${safeUrl(r.url)} answered HTTP ${status}`;
        if (attempt < ATTEMPTS)
          await sleep(retryWait(res.headers['retry-after']) ?? backoff(attempt), undefined, {
            signal: d.signal,
          });
        continue;
      }
      return `HTTP ${status} from ${safeUrl(r.url)}: ${res.body.replace(/\s+/g, ' ').slice(0, 200)}`;
    }
    throw new ServiceUnavailableError('rest', `${last} (after ${ATTEMPTS} attempts)`).coded(
      DestinationErrorCode.Unavailable,
    );
  }

  /** The vetted address (an http URL must be allow-listed: nothing crosses the network in clear text otherwise). */
  private async vet(target: LoadTarget, url: URL): Promise<string> {
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    try {
      const permit = await this.policy(target).check(url.hostname, port);
      if (url.protocol === 'http:' && !permit.allowListed) {
        throw new ValidationError(
          `the REST endpoint ${safeUrl(url.href)} uses http: only endpoints in REST_SINK_ALLOW may (use https)`,
        ).coded(DestinationErrorCode.EndpointRefused);
      }
      return permit.address;
    } catch (err) {
      if (err instanceof EgressRefused)
        throw new ValidationError(`the REST endpoint is not allowed: ${err.message}`).coded(
          DestinationErrorCode.EndpointRefused,
        );
      throw err;
    }
  }

  private async authHeaders(environment: string, r: RestTarget): Promise<Record<string, string>> {
    if (!r.secretName) return {};
    const s = await this.sectionSecret(environment, r.secretName);
    if (s.token) return { authorization: `Bearer ${s.token}` };
    if (s.username && s.password) {
      return { authorization: `Basic ${Buffer.from(`${s.username}:${s.password}`).toString('base64')}` };
    }
    if (s.headerName && s.apiKey) {
      if (!/^[A-Za-z0-9-]{1,64}$/.test(s.headerName))
        throw new ValidationError(
          `secret '${r.secretName}' has a headerName that is not an HTTP header name`,
        ).coded(DestinationErrorCode.InvalidSecret);
      return { [s.headerName.toLowerCase()]: s.apiKey };
    }
    throw new ValidationError(
      `secret '${r.secretName}' has no token, username + password, or headerName + apiKey`,
    ).coded(DestinationErrorCode.InvalidSecret);
  }
}

function targetOf(destination: PipelineDefinition['destination']): RestTarget {
  return sectionOf<RestTarget>(destination, 'rest');
}

/** The URL without query and fragment: those may carry tokens. */
function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'an invalid URL';
  }
}

function backoff(attempt: number): number {
  return Math.min(MAX_WAIT_MS, 250 * 2 ** (attempt - 1));
}

function retryWait(header: string | undefined): number | null {
  if (!header) return null;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(ms) && ms >= 0 ? Math.min(ms, MAX_WAIT_MS) : null;
}
