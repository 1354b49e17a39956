import { Counter, Registry } from 'prom-client';
import { sharedMetric } from '@tapyard/core';
import { Destination } from './destination';

/**
 * The destination with its loads counted: rows written per destination type (its plug-in name, a
 * bounded label). A redelivery that finds the job already committed wrote nothing and adds nothing.
 */
export function metered(destination: Destination, registry: Registry): Destination {
  const rows = sharedMetric(
    registry,
    'tapyard_rows_loaded_total',
    () =>
      new Counter({
        name: 'tapyard_rows_loaded_total',
        help: 'Rows written by loads, per destination type',
        labelNames: ['destination'],
        registers: [registry],
      }),
  );
  const load: Destination['load'] = async (...args) => {
    const result = await destination.load(...args);
    if (!result.alreadyLoaded) rows.inc({ destination: destination.name }, result.loaded);
    return result;
  };
  // Everything else is the destination itself (`this` included), so its state stays in one object
  // and `instanceof` checks still hold.
  return new Proxy(destination, {
    get(target, prop) {
      if (prop === 'load') return load;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
