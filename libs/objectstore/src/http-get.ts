import { Socket, connect } from 'node:net';

/** One answer to a GET: its status, its headers (lowercase names) and its whole body. */
export interface GetAnswer {
  status: number;
  headers: Map<string, string>;
  body: Buffer;
}

export interface GetTarget {
  host: string;
  port: number;
  /** A connection silent this long fails the request (a store that hangs). */
  idleMs: number;
}

/** The status line and headers must fit in this (an S3 answer's are well under 2 KiB). */
const HEAD_BYTES = 16_384;
/** Bodies of refusals (their XML names the error) are read up to this; a larger one is refused unread. */
const REFUSAL_BYTES = 1 << 20;
/** Idle keep-alive connections kept per target. */
const IDLE_CONNECTIONS = 8;

/**
 * GETs over HTTP/1.1 keep-alive connections whose socket reads land straight in the answer's body:
 * `net.connect`'s `onread` asks for the memory of each read, which is the part of the body still to
 * come, so a 4 MiB part arrives without a Buffer, a copy or a stream event per 64 KiB socket read (on
 * the worker, those and the garbage they made were most of reading the staged input). Only what S3
 * answers a GET is taken: a status line, headers and a `content-length` body; anything else (chunked
 * or unbounded bodies, informational answers, bytes past the body) fails the request, or drops the
 * connection once its answer is whole.
 */
export class HttpGetter {
  private readonly idle: Connection[] = [];

  constructor(private readonly target: GetTarget) {}

  /**
   * `head` is the request's start line and headers (CRLF-separated, ending with an empty line).
   * `okBodyBytes(length)` sees a successful answer's content-length before its body is read, and
   * refuses it by throwing. `memory(length)`, when given, supplies a successful answer's body (exactly
   * `length` bytes); by default each body gets a buffer of its own.
   */
  async get(head: string, okBodyBytes: (length: number) => void, memory?: BodyMemory): Promise<GetAnswer> {
    for (;;) {
      const reused = this.idle.pop();
      const conn =
        reused ??
        new Connection(
          this.target,
          (c) => this.release(c),
          (c) => this.forget(c),
        );
      try {
        return await conn.request(head, okBodyBytes, memory ?? ownBuffer);
      } catch (err) {
        // A kept connection the store closed meanwhile fails before any byte of an answer: the GET is
        // idempotent, so it is sent again once, on a new connection.
        if (!(reused && err instanceof StaleConnection))
          throw err instanceof StaleConnection ? err.cause : err;
      }
    }
  }

  /** Closes the idle connections (in use ones close when their request ends). */
  close(): void {
    for (const c of this.idle.splice(0)) c.destroy();
  }

  private release(c: Connection): void {
    if (this.idle.length < IDLE_CONNECTIONS) this.idle.push(c);
    else c.destroy();
  }

  /** A connection the store closed or that failed leaves the pool. */
  private forget(c: Connection): void {
    const i = this.idle.indexOf(c);
    if (i >= 0) this.idle.splice(i, 1);
  }
}

/** Memory for a body of `length` bytes: a Buffer of exactly that length, all of its ArrayBuffer. */
export type BodyMemory = (length: number) => Buffer;

/** Its own memory, so the body can be handed to a thread without a copy. */
const ownBuffer: BodyMemory = (length) => Buffer.allocUnsafeSlow(length);

/** A kept connection that failed before any byte of the answer arrived. */
class StaleConnection extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
  }
}

type State =
  | { kind: 'idle' }
  | {
      kind: 'head' | 'body';
      /** Whether the connection served an earlier request (it may have been closed meanwhile). */
      reused: boolean;
      got: number;
      answer: GetAnswer | null;
      okBodyBytes: (length: number) => void;
      bodyMemory: BodyMemory;
      resolve: (a: GetAnswer) => void;
      reject: (e: Error) => void;
    };

class Connection {
  private readonly socket: Socket;
  /** The answer's status line and headers; also where reads go between requests. */
  private readonly headBuf = Buffer.allocUnsafe(HEAD_BYTES);
  private state: State = { kind: 'idle' };
  private keep = true;
  private used = false;
  private failure: Error | null = null;

  constructor(
    private readonly target: GetTarget,
    private readonly release: (c: Connection) => void,
    private readonly dead: (c: Connection) => void,
  ) {
    this.socket = connect({
      host: target.host,
      port: target.port,
      noDelay: true,
      onread: { buffer: () => this.memory(), callback: (n, buf) => this.received(n, buf) },
    });
    this.socket.setTimeout(target.idleMs, () =>
      this.fail(new Error(`the object store did not answer within ${Math.round(target.idleMs / 1000)} s`)),
    );
    this.socket.on('end', () => {
      const s = this.state;
      this.fail(
        new Error(
          s.kind === 'body' && s.answer
            ? `the object store closed the connection after ${s.got} of ${s.answer.body.length} bytes`
            : 'the object store closed the connection before it answered',
        ),
      );
    });
    this.socket.on('error', (err) => this.fail(err));
    this.socket.on('close', () => this.fail(new Error('the connection to the object store closed')));
  }

  request(head: string, okBodyBytes: (length: number) => void, memory: BodyMemory): Promise<GetAnswer> {
    if (this.failure) return Promise.reject(new StaleConnection(this.failure));
    const reused = this.used;
    this.used = true;
    this.socket.ref();
    return new Promise<GetAnswer>((resolve, reject) => {
      this.state = {
        kind: 'head',
        reused,
        got: 0,
        answer: null,
        okBodyBytes,
        bodyMemory: memory,
        resolve,
        reject,
      };
      this.socket.write(head);
    });
  }

  destroy(): void {
    this.keep = false;
    this.socket.destroy();
  }

  /**
   * The memory the next socket read fills (Node asks after each read, for the next one): the rest of
   * the head, then the rest of the body. Between requests it is the head's, where the next answer's
   * first bytes belong.
   */
  private memory(): Buffer {
    const s = this.state;
    if (s.kind === 'body' && s.answer && s.got < s.answer.body.length) return s.answer.body.subarray(s.got);
    return this.headBuf.subarray(s.kind === 'head' ? s.got : 0);
  }

  /** `n` bytes arrived in `buf`; never pauses the socket (the next read's memory is always there). */
  private received(n: number, buf: Uint8Array): true {
    const s = this.state;
    if (s.kind === 'idle') {
      this.fail(new Error('the object store sent bytes nobody asked for'));
      return true;
    }
    try {
      const into = s.kind === 'body' ? s.answer?.body : this.headBuf;
      if (!into || s.got + n > into.length) {
        throw new Error(
          s.kind === 'body'
            ? 'the object store sent more than its content-length'
            : `the object store's answer has more than ${HEAD_BYTES} bytes of headers`,
        );
      }
      // Reads land where memory() said; should a read have gone elsewhere, its bytes are moved there.
      if (buf.buffer !== into.buffer || buf.byteOffset !== into.byteOffset + s.got) {
        into.set(buf.subarray(0, n), s.got);
      }
      if (s.kind === 'body') s.got += n;
      else this.headReceived(s, n);
      if (s.kind === 'body' && s.answer && s.got === s.answer.body.length) this.finish(s.answer, s.resolve);
    } catch (err) {
      this.fail(err as Error);
    }
    return true;
  }

  private headReceived(s: Extract<State, { kind: 'head' | 'body' }>, n: number): void {
    const from = Math.max(0, s.got - 3);
    s.got += n;
    const end = this.headBuf.subarray(0, s.got).indexOf('\r\n\r\n', from, 'latin1');
    if (end < 0) {
      if (s.got >= HEAD_BYTES)
        throw new Error(`the object store's answer has more than ${HEAD_BYTES} bytes of headers`);
      return;
    }
    const lines = this.headBuf.toString('latin1', 0, end).split('\r\n');
    const status = /^HTTP\/1\.([01]) ([2-5]\d\d)(?: |$)/.exec(lines[0]);
    if (!status)
      throw new Error(`the object store answered '${lines[0].slice(0, 80)}', not an HTTP/1.1 status`);
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw new Error('the object store answered a malformed header line');
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    if (status[1] === '0' || /(^|,)\s*close\s*($|,)/i.test(headers.get('connection') ?? ''))
      this.keep = false;
    if (headers.has('transfer-encoding')) {
      throw new Error(
        `the object store answered with transfer-encoding ${headers.get('transfer-encoding')}; a content-length is needed`,
      );
    }
    const declared = headers.get('content-length');
    const length = declared !== undefined && /^\d{1,15}$/.test(declared) ? Number(declared) : NaN;
    if (!Number.isSafeInteger(length)) throw new Error('the object store answered without a content-length');
    const code = Number(status[2]);
    const ok = code >= 200 && code < 300;
    if (ok) s.okBodyBytes(length);
    else if (length > REFUSAL_BYTES)
      throw new Error(`the object store refused the request (HTTP ${code}) with a ${length}-byte body`);
    const answer: GetAnswer = { status: code, headers, body: ok ? s.bodyMemory(length) : ownBuffer(length) };
    // Bytes past the body (in the read that brought the head) are a confused server: the answer is
    // taken, the connection not used again, as when they come in a read of their own.
    const early = Math.min(s.got - (end + 4), length);
    if (early < s.got - (end + 4)) this.keep = false;
    this.headBuf.copy(answer.body, 0, end + 4, end + 4 + early);
    Object.assign(s, { kind: 'body', got: early, answer });
  }

  private finish(answer: GetAnswer, resolve: (a: GetAnswer) => void): void {
    this.state = { kind: 'idle' };
    resolve(answer);
    if (!this.keep) return this.destroy();
    this.socket.unref();
    this.release(this);
  }

  private fail(err: Error): void {
    this.failure ??= err;
    const s = this.state;
    this.state = { kind: 'idle' };
    this.keep = false;
    if (s.kind !== 'idle')
      s.reject(s.reused && s.kind === 'head' && s.got === 0 ? new StaleConnection(err) : err);
    this.dead(this);
    if (!this.socket.destroyed) this.socket.destroy();
  }
}
