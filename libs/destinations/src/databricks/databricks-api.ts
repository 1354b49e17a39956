import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceUnavailableError, UpstreamError, ValidationError, errorMessage } from '@tapyard/core';
import { EgressPolicy, EgressRefused, egressRequest } from '@tapyard/egress';
import { Delivery } from '../sinks/sink';
import { DestinationErrorCode } from '../destination-errors';

export interface DatabricksSettings {
  host: string;
  token: string;
  warehouseId: string;
  catalog: string;
  schema: string;
  volume: string;
}

export function databricksSettings(secretName: string, f: Record<string, string>): DatabricksSettings {
  for (const k of ['host', 'token', 'warehouseId', 'catalog', 'schema']) {
    if (!f[k]?.trim())
      throw new ValidationError(
        `secret '${secretName}' lacks '${k}' (Databricks needs host, token, warehouseId, catalog, schema)`,
      ).coded(DestinationErrorCode.InvalidSecret);
  }
  const ident = /^[A-Za-z_][A-Za-z0-9_]{0,254}$/;
  for (const k of ['catalog', 'schema', 'volume']) {
    if (f[k] && !ident.test(f[k]))
      throw new ValidationError(`secret '${secretName}' field '${k}' is not a plain identifier`).coded(
        DestinationErrorCode.InvalidSecret,
      );
  }
  const host = /^https?:\/\//.test(f.host)
    ? f.host.replace(/\/+$/, '')
    : `https://${f.host.replace(/\/+$/, '')}`;
  return {
    host,
    token: f.token,
    warehouseId: f.warehouseId,
    catalog: f.catalog,
    schema: f.schema,
    volume: f.volume || 'tapyard_staging',
  };
}

/** How long the SQL API holds a statement's answer while it runs (then it is polled). */
const STATEMENT_WAIT_S = 30;

interface StatementAnswer {
  statement_id: string;
  status: { state: string; error?: { message?: string; error_code?: string } };
}

/**
 * The two Databricks REST APIs the loader uses, over the egress policy (plain http only for an
 * allow-listed host): the Files API for the staging volume and the SQL Statement Execution API. Each
 * request is bounded by the delivery's request timeout, and a statement's polling by its deadline.
 */
export class DatabricksApi {
  constructor(
    private readonly s: DatabricksSettings,
    private readonly policy: EgressPolicy,
    private readonly d: Delivery,
    private readonly requestTimeoutMs: number,
  ) {}

  private async call(
    method: string,
    path: string,
    body?: string | Buffer,
    contentType = 'application/json',
    timeoutMs = this.requestTimeoutMs,
  ) {
    const url = `${this.s.host}${path}`;
    const u = new URL(url);
    if (u.protocol === 'http:') {
      const port = u.port ? Number(u.port) : 80;
      if (!this.policy.isAllowListed(u.hostname, port)) {
        throw new ValidationError(
          `the Databricks host ${u.host} uses http: only an allow-listed host may (use https)`,
        ).coded(DestinationErrorCode.EndpointRefused);
      }
    }
    try {
      return await this.d.call(
        `${method} ${u.pathname.split('/').slice(0, 5).join('/')}`,
        (signal) =>
          egressRequest(this.policy, url, {
            method,
            headers: {
              authorization: `Bearer ${this.s.token}`,
              ...(body !== undefined ? { 'content-type': contentType } : {}),
            },
            body,
            maxBytes: 1 << 20,
            signal,
          }),
        timeoutMs,
      );
    } catch (err) {
      if (err instanceof EgressRefused)
        throw new ValidationError(`the Databricks host is not allowed: ${err.message}`).coded(
          DestinationErrorCode.EndpointRefused,
        );
      if (err instanceof ServiceUnavailableError) throw err;
      throw new ServiceUnavailableError(
        'databricks',
        `Databricks at ${u.host} is unreachable: ${errorMessage(err)}`,
      ).coded(DestinationErrorCode.Unavailable);
    }
  }

  /** Puts a file into the staging volume (overwriting: a redelivery writes the same name). */
  async upload(relative: string, bytes: Buffer): Promise<string> {
    const path = `/Volumes/${this.s.catalog}/${this.s.schema}/${this.s.volume}/${relative}`;
    const res = await this.call(
      'PUT',
      `/api/2.0/fs/files${encodeURI(path)}?overwrite=true`,
      bytes,
      'application/octet-stream',
      this.requestTimeoutMs + Math.ceil(bytes.length / 1000), // + 1 s a MB
    );
    if (res.status >= 500 || res.status === 429)
      throw new ServiceUnavailableError(
        'databricks',
        `Databricks answered HTTP ${res.status} to a file upload`,
      ).coded(DestinationErrorCode.Unavailable);
    if (res.status >= 300)
      throw new UpstreamError(
        `Databricks refused the upload of ${relative}: HTTP ${res.status} ${res.body.slice(0, 200)}`,
      ).coded(DestinationErrorCode.UpstreamFailed);
    return path;
  }

  /** Runs one statement on the warehouse and waits for it to finish. */
  async sql(statement: string): Promise<void> {
    const res = await this.call(
      'POST',
      '/api/2.0/sql/statements',
      JSON.stringify({
        warehouse_id: this.s.warehouseId,
        statement,
        wait_timeout: `${STATEMENT_WAIT_S}s`,
        on_wait_timeout: 'CONTINUE',
      }),
      'application/json',
      // The warehouse holds its answer up to wait_timeout before saying the statement still runs.
      this.requestTimeoutMs + STATEMENT_WAIT_S * 1000,
    );
    let answer = this.answer(res.status, res.body);
    const deadline = Date.now() + 10 * 60_000;
    while (answer.status.state === 'PENDING' || answer.status.state === 'RUNNING') {
      if (Date.now() > deadline)
        throw new ServiceUnavailableError(
          'databricks',
          'a Databricks statement ran longer than 10 minutes',
        ).coded(DestinationErrorCode.Unavailable);
      await sleep(1000, undefined, { signal: this.d.signal });
      const poll = await this.call(
        'GET',
        `/api/2.0/sql/statements/${encodeURIComponent(answer.statement_id)}`,
      );
      answer = this.answer(poll.status, poll.body);
    }
    if (answer.status.state !== 'SUCCEEDED') {
      throw new UpstreamError(
        `Databricks statement ${answer.status.state.toLowerCase()}: ${answer.status.error?.message?.slice(0, 300) ?? 'no reason given'}`,
      ).coded(DestinationErrorCode.UpstreamFailed);
    }
  }

  private answer(status: number, body: string): StatementAnswer {
    if (status >= 500 || status === 429)
      throw new ServiceUnavailableError('databricks', `Databricks answered HTTP ${status}`).coded(
        DestinationErrorCode.Unavailable,
      );
    if (status >= 300)
      throw new UpstreamError(`Databricks refused the statement: HTTP ${status} ${body.slice(0, 200)}`).coded(
        DestinationErrorCode.UpstreamFailed,
      );
    return JSON.parse(body) as StatementAnswer;
  }
}
