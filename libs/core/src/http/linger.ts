import type { IncomingMessage } from 'node:http';

/** How long a request answered before its body ended may go without sending a byte before the answer goes out. */
export const LINGER_IDLE_MS = 2_000;
/** How long such a request may keep sending in all. */
export const LINGER_MAX_MS = 30_000;

/**
 * Discards what is left of a request body, so that an early answer (a 400 for a malformed multipart
 * head, a 401 before an upload, a 503 when the object store failed mid-upload) reaches the client.
 * Node closes a `Connection: close` socket as soon as the answer is written; body bytes still unread
 * in the kernel's buffer turn that close into a TCP reset, and the client loses the answer it was
 * sent (it sees EPIPE or ECONNRESET instead). This is the "lingering close" other HTTP servers do,
 * bounded the way nginx bounds it: a client that keeps sending is waited for (a busy client machine
 * sends slowly), one silent for `idleMs` is not, and none longer than `maxMs` in all.
 */
export function drainRequest(
  req: IncomingMessage,
  idleMs = LINGER_IDLE_MS,
  maxMs = LINGER_MAX_MS,
): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  return new Promise<void>((done) => {
    let idle: NodeJS.Timeout;
    const finish = () => {
      clearTimeout(idle);
      clearTimeout(total);
      req.off('data', sent);
      done();
    };
    const sent = () => {
      clearTimeout(idle);
      idle = setTimeout(finish, idleMs);
      idle.unref();
    };
    const total = setTimeout(finish, maxMs);
    total.unref();
    sent();
    req.on('data', sent);
    req.once('end', finish);
    req.once('close', finish);
    req.resume();
  });
}
