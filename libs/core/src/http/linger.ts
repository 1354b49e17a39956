import type { IncomingMessage } from 'node:http';

/** How long a request answered before its body ended may keep sending before the answer goes out. */
export const LINGER_MS = 2_000;

/**
 * Discards what is left of a request body, for at most `maxMs`, so that an early answer (a 400 for
 * a malformed multipart head, a 401 before an upload) reaches the client. Node closes a
 * `Connection: close` socket as soon as the answer is written; body bytes still unread in the
 * kernel's buffer turn that close into a TCP reset, and the client loses the answer it was sent.
 * This is the "lingering close" other HTTP servers do.
 */
export function drainRequest(req: IncomingMessage, maxMs = LINGER_MS): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  return new Promise<void>((done) => {
    const finish = () => {
      clearTimeout(timer);
      done();
    };
    const timer = setTimeout(finish, maxMs);
    timer.unref();
    req.once('end', finish);
    req.once('close', finish);
    req.resume();
  });
}
