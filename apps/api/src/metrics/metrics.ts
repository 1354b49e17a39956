import { Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ForbiddenError, TapyardConfig } from '@tapyard/core';

/** Prometheus registry of one API process: process defaults plus HTTP request timings. */
export class ApiMetrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly environment: string;
  private readonly multiTenant: boolean;

  constructor(config: Pick<TapyardConfig, 'environment' | 'auth'>) {
    const { environment } = config;
    this.environment = environment;
    this.multiTenant = config.auth.multiTenant;
    this.registry.setDefaultLabels({ environment });
    collectDefaultMetrics({ register: this.registry, prefix: 'tapyard_' });
    this.httpDuration = new Histogram({
      name: 'tapyard_http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status',
      // Route templates only (never raw paths), so secret names and tokens stay out of labels.
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
  }

  /**
   * The exposition text. It describes the whole process, every tenant's requests and model use
   * included, so in multi-tenant mode only the operator's full access (`*:*`) reads it: a tenant's
   * `platform:read` covers its own environment, and reaching into tenants takes `*:*`.
   */
  async exposition(viewer: { environment: string; fullAccess: boolean }): Promise<string> {
    if (this.multiTenant && (viewer.environment !== this.environment || !viewer.fullAccess)) {
      throw new ForbiddenError(
        '/metrics covers every tenant of this process: in multi-tenant mode it needs an operator key with full access (*:*)',
      );
    }
    return this.registry.metrics();
  }
}
