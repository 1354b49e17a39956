import { Metric, Registry } from 'prom-client';

/**
 * The Prometheus registry of the process, for libraries that count their own events (rows loaded,
 * stage stalls, tap runs). Optional: without it those libraries count nothing.
 */
export const METRICS_REGISTRY = Symbol('METRICS_REGISTRY');

/**
 * The metric `name` of `registry`, made once: several providers of one process (or one test process
 * holding several applications on one registry) may ask for the same counter.
 */
export function sharedMetric<T extends Metric>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}
