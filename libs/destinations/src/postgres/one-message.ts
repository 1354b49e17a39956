import type { Connection, DatabaseError, PoolClient, Submittable } from 'pg';
import { Payload } from '../destination';
import { binaryOf, copyData, copyKey, copySql } from './pg-copy';

/**
 * COPY data up to this many bytes goes in one message with the statements before it (see
 * sendOneMessage); a larger load streams as before.
 */
export const ONE_MESSAGE_BYTES = 256 * 1024;

/** The payloads of a load, and all of them when they are few and small enough for one message. */
export interface TakenPayloads {
  /** Every payload, in order (those read ahead first). */
  readonly payloads: AsyncIterable<Payload>;
  /** All of them when they ended within ONE_MESSAGE_BYTES and share one COPY; null otherwise. */
  readonly whole: Payload[] | null;
}

/**
 * Reads payloads ahead until they end or pass ONE_MESSAGE_BYTES. A part's memory is never waited
 * for (PartBuffers allocates when none is free), so holding the first payloads while reading the
 * next cannot stall the stage.
 */
export async function takeSmall(payloads: AsyncIterable<Payload>): Promise<TakenPayloads> {
  const it = payloads[Symbol.asyncIterator]();
  const ahead: Payload[] = [];
  let bytes = 0;
  for (;;) {
    const next = await it.next();
    if (next.done) break;
    ahead.push(next.value);
    const p = next.value;
    // Binary COPY is for large loads (see copy-binary.ts), and its types are checked in a statement of
    // their own (see pg-copy.ts): never one message.
    bytes +=
      typeof p === 'string'
        ? Buffer.byteLength(p)
        : 'bytes' in p && binaryOf(p) === null
          ? p.bytes.byteLength
          : Infinity;
    if (bytes > ONE_MESSAGE_BYTES || copyKey(p) !== copyKey(ahead[0])) {
      const rest = async function* (): AsyncIterable<Payload> {
        let ended = false;
        try {
          yield* ahead;
          for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
          ended = true;
        } finally {
          // A consumer that stops early stops the source too, as it would have without the read-ahead.
          if (!ended) await it.return?.();
        }
      };
      return { payloads: rest(), whole: null };
    }
  }
  const replay = async function* (): AsyncIterable<Payload> {
    yield* ahead;
  };
  return { payloads: replay(), whole: ahead };
}

/** What the one message did: the claim's fate, the rows COPY took, and those its data held (`counted`). */
export type OneMessageOutcome = { claimed: false } | { claimed: true; rows: number; counted: number };

/**
 * Sends a small append load's statements and its COPY data in one write: `opening` (BEGIN, the
 * settings, the ledger claim as a plain INSERT), the COPY, its data and CopyDone, as one simple
 * Query followed by its copy messages. PostgreSQL runs the statements of a Query in order and a COPY
 * FROM STDIN among them reads the CopyData that follows; on an error it discards the rest of the
 * Query, and CopyData or CopyDone outside a COPY are dropped (the protocol's rule), so nothing runs
 * past a failed statement. A claim that finds the job's ledger row fails as a unique violation before
 * any row is copied: `claimed: false`, with the transaction failed (the caller rolls it back). One
 * round trip instead of three (BEGIN and claim, COPY start, CopyDone); the caller then commits, or
 * `closing` did (its statements run after the COPY, in the same Query).
 */
export async function sendOneMessage(
  client: PoolClient,
  opening: string,
  table: string,
  textColumns: string,
  payloads: Payload[],
  /**
   * Statements after the COPY (`; …`) for the rows its data holds, run once the data is in: the
   * ledger's counts and the COMMIT.
   */
  closing: (counted: number) => string = () => '',
  /**
   * Asked when the message failed: true when it made good what the failure named (the caller rolled back
   * and made a missing table), and the same message goes once more.
   */
  repair?: (err: unknown) => Promise<boolean>,
): Promise<OneMessageOutcome> {
  const data = payloads.map(copyData);
  const counted = data.reduce((n, d) => n + d.rows, 0);
  const statements = `${opening}${payloads.length > 0 ? `; ${copySql(table, textColumns, payloads[0])}` : ''}${closing(counted)}`;
  const parts: Uint8Array[] = [frame(0x51, Buffer.from(`${statements}\0`))];
  for (const d of data) parts.push(frame(0x64, typeof d.data === 'string' ? Buffer.from(d.data) : d.data));
  if (payloads.length > 0) parts.push(frame(0x63, Buffer.alloc(0)));
  const message = Buffer.concat(parts);
  // The bytes are copied into the message: the payloads' memory is free again.
  for (const d of data) d.written?.();
  const send = (): Promise<string[] | null> => {
    const query = new OneMessage(statements, message);
    client.query(query);
    return query.done.catch((err: unknown) => {
      const claimFailed =
        (err as DatabaseError).code === '23505' && !query.commands.some((c) => c.startsWith('INSERT'));
      if (claimFailed) return null;
      throw err;
    });
  };
  const commands = await send().catch(async (err: unknown) => {
    if (repair === undefined || !(await repair(err))) throw err;
    return send();
  });
  if (commands === null) return { claimed: false };
  const copied = commands.find((c) => c.startsWith('COPY '));
  return { claimed: true, rows: copied === undefined ? 0 : Number(copied.slice(5)), counted };
}

/** A protocol message: its type byte, its length, its body. */
function frame(type: number, body: Uint8Array): Buffer {
  const head = Buffer.allocUnsafe(5);
  head[0] = type;
  head.writeInt32BE(body.byteLength + 4, 1);
  return Buffer.concat([head, body]);
}

/**
 * The one message as node-postgres runs a query of its own making (a Submittable): the client hands
 * it every message until ReadyForQuery, which ends it.
 */
class OneMessage implements Submittable {
  readonly commands: string[] = [];
  readonly done: Promise<string[]>;
  private settle!: { resolve: (c: string[]) => void; reject: (e: unknown) => void };
  private failed = false;

  /** `text`: the statements (what a log or a test names the query by). */
  constructor(
    readonly text: string,
    private readonly message: Buffer,
  ) {
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
  }

  submit(connection: Connection): void {
    connection.stream.write(this.message);
  }

  handleCommandComplete(msg: { text: string }): void {
    this.commands.push(msg.text);
  }

  handleError(err: unknown): void {
    // A server error is followed by ReadyForQuery, a broken connection by nothing: answer now either way.
    this.failed = true;
    this.settle.reject(err);
  }

  handleReadyForQuery(): void {
    if (!this.failed) this.settle.resolve(this.commands);
  }

  // The data went with the Query; rows (set_config's) and the rest need nothing.
  handleCopyInResponse(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}
