import { Counter, Histogram, Registry } from 'prom-client';

/** Token usage and latency of model calls, per feature and model. */
export class AiMetrics {
  readonly tokens: Counter<'feature' | 'model' | 'kind'>;
  readonly duration: Histogram<'feature' | 'model' | 'outcome'>;

  constructor(registry: Registry) {
    this.tokens = new Counter({
      name: 'tapyard_ai_tokens_total',
      help: 'Tokens sent to (kind=input) and received from (kind=output) model providers',
      labelNames: ['feature', 'model', 'kind'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'tapyard_ai_request_duration_seconds',
      help: 'Model calls by feature, model and outcome (ok, error, cancelled)',
      labelNames: ['feature', 'model', 'outcome'],
      buckets: [0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160],
      registers: [registry],
    });
  }
}
