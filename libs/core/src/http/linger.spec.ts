import { IncomingMessage, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { drainRequest } from './linger';

/**
 * A server that answers every request at once, without reading its body, after drainRequest: what
 * the client gets, and whether the body had ended when the answer went out.
 */
async function earlyAnswer(
  idleMs: number,
  send: (write: (chunk: string) => void) => Promise<void>,
): Promise<{ status: number | null; error: string | null; bodyEnded: boolean }> {
  let bodyEnded = false;
  const server = createServer((req: IncomingMessage, res) => {
    void drainRequest(req, idleMs, 10_000).then(() => {
      bodyEnded = req.complete;
      res.writeHead(503, { Connection: 'close' }).end('unavailable');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const answer = new Promise<{ status: number | null; error: string | null }>((resolve) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/' });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? null, error: null }));
      });
      req.on('error', (err: NodeJS.ErrnoException) =>
        resolve({ status: null, error: err.code ?? err.message }),
      );
      void send((chunk) => req.write(chunk)).then(() => req.end());
    });
    return { ...(await answer), bodyEnded };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe('drainRequest (lingering close)', () => {
  it('waits for a client that keeps sending past the idle bound in all, so that it reads the answer', async () => {
    // Seven pieces 100 ms apart: 700 ms of body against a 300 ms idle bound. A single bound of 300 ms
    // would answer mid-body.
    const got = await earlyAnswer(300, async (write) => {
      for (let i = 0; i < 7; i++) {
        write('x'.repeat(64 * 1024));
        await sleep(100);
      }
    });
    expect(got).toEqual({ status: 503, error: null, bodyEnded: true });
  });

  it('answers a client that stops sending once it was silent for the idle bound', async () => {
    let release: () => void = () => undefined;
    const silent = new Promise<void>((resolve) => (release = resolve));
    const got = earlyAnswer(200, async (write) => {
      write('x'.repeat(1024));
      await silent;
    });
    const result = await Promise.race([got, sleep(5_000).then(() => 'no answer' as const)]);
    release();
    expect(result).toEqual({ status: 503, error: null, bodyEnded: false });
  });
});
