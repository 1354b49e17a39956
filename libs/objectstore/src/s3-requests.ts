import { Agent as HttpAgent, IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { crc32 } from 'node:zlib';
import { BodyMemory, GetAnswer, HttpGetter } from './http-get';
import { SigV4, amzDate } from './sigv4';

/** What the store answered when it refused a request: its S3 error code and message. */
export class S3RequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface S3Endpoint {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  region: string;
  /** A request whose connection stays silent this long fails (a store that hangs). Default 30 s. */
  idleTimeoutMs?: number;
}

const IDLE_TIMEOUT_MS = 30_000;

/** Longest error body read from the store (its XML names the code and message). */
const ERROR_BODY_BYTES = 16_384;

/**
 * The two requests on the staging data path (a part's PUT and GET), signed by us rather than by the
 * `minio` client, which over http signs the payload's SHA-256 and computes an MD5 beside it: about a
 * third of an upload's CPU on the API. These are signed `UNSIGNED-PAYLOAD` (what the client itself
 * does over https) with a CRC32 checksum the store verifies (`x-amz-checksum-crc32`, S3 and MinIO),
 * so a part corrupted on the way is still refused, at a twentieth of the cost. The GET asks for the
 * checksum back and checks it. Everything else goes through the client.
 */
export class S3Requests {
  private readonly url: URL;
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;
  private readonly signer: SigV4;
  /** GETs over plain HTTP read straight into the part's memory (HttpGetter); over TLS, through Node's client. */
  private readonly getter: HttpGetter | null;

  constructor(private readonly endpoint: S3Endpoint) {
    this.url = new URL(endpoint.endpoint);
    const https = this.url.protocol === 'https:';
    this.agent = https ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
    this.send = https ? httpsRequest : httpRequest;
    this.signer = new SigV4(endpoint.accessKey, endpoint.secretKey, endpoint.region);
    this.getter = https
      ? null
      : new HttpGetter({
          host: this.url.hostname.replace(/^\[|\]$/g, ''),
          port: Number(this.url.port || 80),
          idleMs: endpoint.idleTimeoutMs ?? IDLE_TIMEOUT_MS,
        });
  }

  /** One object from its chunks (written as they are, never concatenated). */
  async put(bucket: string, key: string, chunks: readonly Buffer[], contentType: string): Promise<void> {
    let crc = 0;
    let length = 0;
    for (const c of chunks) {
      crc = crc32(c, crc);
      length += c.length;
    }
    const res = await this.request(
      'PUT',
      bucket,
      key,
      {
        'content-type': contentType,
        'content-length': String(length),
        'x-amz-checksum-crc32': checksum(crc),
      },
      chunks,
    );
    await expectOk(res);
    res.resume();
  }

  /**
   * The whole object in one buffer of its own (transferable to a thread; `memory` may supply it),
   * or null when there is no such object. An object larger than `maxBytes` is refused before its
   * body is read.
   */
  async get(bucket: string, key: string, maxBytes: number, memory?: BodyMemory): Promise<Buffer | null> {
    const refuseLarger = (length: number) => {
      if (length > maxBytes)
        throw new Error(`object '${key}' has ${length} bytes; at most ${maxBytes} are read`);
    };
    if (this.getter) {
      const { path, headers } = this.signed('GET', bucket, key, { 'x-amz-checksum-mode': 'ENABLED' });
      let head = `GET ${path} HTTP/1.1\r\n`;
      for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
      return checked(key, await this.getter.get(`${head}\r\n`, refuseLarger, memory));
    }
    const res = await this.request('GET', bucket, key, { 'x-amz-checksum-mode': 'ENABLED' });
    const chunks: Buffer[] = [];
    if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) {
      const length = Number(res.headers['content-length']);
      if (!Number.isSafeInteger(length)) {
        res.destroy();
        throw new Error(`object '${key}' came without a content-length`);
      }
      try {
        refuseLarger(length);
      } catch (err) {
        res.destroy();
        throw err;
      }
    }
    let size = 0;
    for await (const chunk of res as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
    }
    // Its own memory (a small Buffer.concat would share Node's pool, which a transfer would detach).
    const body = Buffer.allocUnsafeSlow(size);
    size = 0;
    for (const c of chunks) size += c.copy(body, size);
    const headers = new Map<string, string>();
    for (const [name, value] of Object.entries(res.headers))
      if (typeof value === 'string') headers.set(name, value);
    return checked(key, { status: res.statusCode ?? 0, headers, body });
  }

  /** The request's path and headers, `authorization` among them. */
  private signed(
    method: 'GET' | 'PUT',
    bucket: string,
    key: string,
    extra: Record<string, string>,
  ): { path: string; headers: Record<string, string> } {
    // Every segment escaped, the bucket's too (a valid bucket name is unchanged by it): no byte of a name
    // can end the request line or add a header on the hand-written GET.
    const path = `/${escapeSegment(bucket)}/${key.split('/').map(escapeSegment).join('/')}`;
    const headers: Record<string, string> = {
      host: this.url.host,
      'x-amz-date': amzDate(new Date()),
      'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
      ...extra,
    };
    headers.authorization = this.signer.authorization(method, path, headers, 'UNSIGNED-PAYLOAD');
    return { path, headers };
  }

  private request(
    method: 'GET' | 'PUT',
    bucket: string,
    key: string,
    extra: Record<string, string>,
    body: readonly Buffer[] = [],
  ): Promise<IncomingMessage> {
    const { path, headers } = this.signed(method, bucket, key, extra);
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = this.send(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname,
          port: this.url.port || undefined,
          method,
          path,
          headers,
          agent: this.agent,
        },
        resolve,
      );
      req.on('error', reject);
      // Covers the answer's body too: its socket keeps this timeout while the response streams.
      const idleMs = this.endpoint.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
      req.setTimeout(idleMs, () =>
        req.destroy(new Error(`the object store did not answer within ${Math.round(idleMs / 1000)} s`)),
      );
      // Corked: the chunks leave in one writev, not one write per chunk.
      req.cork();
      for (const chunk of body) req.write(chunk);
      req.end();
    });
  }
}

/** S3's canonical URI encoding of a path segment (RFC 3986 unreserved characters kept). */
function escapeSegment(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function checksum(crc: number): string {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(crc >>> 0);
  return b.toString('base64');
}

/** A GET's body, null for a missing object; refusals and corrupted bodies throw. */
function checked(key: string, answer: GetAnswer): Buffer | null {
  const { status, headers, body } = answer;
  if (status < 200 || status >= 300) {
    const err = refusalOf(status, body.toString('utf8', 0, Math.min(body.length, ERROR_BODY_BYTES)));
    if (status === 404 && err.code === 'NoSuchKey') return null;
    throw err;
  }
  const expected = headers.get('x-amz-checksum-crc32');
  if (expected !== undefined && expected !== checksum(crc32(body))) {
    throw new Error(`object '${key}' does not match its CRC32 checksum: it was corrupted on the way`);
  }
  return body;
}

async function expectOk(res: IncomingMessage): Promise<void> {
  if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) return;
  throw await refusal(res);
}

async function refusal(res: IncomingMessage): Promise<S3RequestError> {
  let text = '';
  for await (const chunk of res as AsyncIterable<Buffer>) {
    text += chunk.toString('utf8');
    if (text.length >= ERROR_BODY_BYTES) break; // leaving the loop ends the response
  }
  return refusalOf(res.statusCode ?? 0, text);
}

function refusalOf(status: number, text: string): S3RequestError {
  const tag = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(text)?.[1] ?? '';
  const code = tag('Code') || `HTTP ${status}`;
  return new S3RequestError(status, code, `${code}: ${tag('Message') || 'the store refused the request'}`);
}
