import { Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus registry of one API process: process defaults plus HTTP request timings. */
export class ApiMetrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;

  constructor(environment: string) {
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
}
