import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig, errorMessage } from '@tapyard/core';
import { Readiness } from '@tapyard/health';
import { WorkerDrain } from './worker-drain';
import { WorkerMetrics } from './worker-metrics';

/**
 * The worker's operations port (WORKER_HTTP_PORT on WORKER_HTTP_HOST): `/livez`, `/readyz` and
 * `/metrics`, nothing else. It carries no data and takes no input, so it needs no key; bind it to
 * an address only the orchestrator and the metrics scraper reach. It keeps answering while the
 * worker drains, so the 503 of `/readyz` is seen, and closes with the application.
 */
@Injectable()
export class WorkerHttp implements OnApplicationBootstrap, OnApplicationShutdown {
  private server: Server | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly readiness: Readiness,
    private readonly metrics: WorkerMetrics,
    private readonly drain: WorkerDrain,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const server = createServer((req, res) => void this.answer(req, res));
    const { httpPort, httpHost } = this.config.worker;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(httpPort, httpHost, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    const { address, port } = server.address() as AddressInfo;
    this.logger.info(`worker http listening on ${address}:${port}`);
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    await new Promise((resolve) => {
      server.close(resolve);
      server.closeAllConnections();
    });
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return send(res, 405, 'text/plain', 'method not allowed');
      if (path === '/livez') return send(res, 200, 'application/json', '{"status":"ok"}');
      if (path === '/readyz') {
        const ready = this.drain.taking && (await this.readiness.ready());
        return send(
          res,
          ready ? 200 : 503,
          'application/json',
          ready ? '{"status":"ok"}' : '{"status":"unavailable"}',
        );
      }
      if (path === '/metrics')
        return send(res, 200, this.metrics.contentType, await this.metrics.exposition());
      return send(res, 404, 'text/plain', 'not found');
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'worker http request failed');
      if (!res.headersSent) send(res, 500, 'text/plain', 'internal error');
    }
  }
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
}
