import { LoadTarget } from '@tapyard/destinations';
import { Leg } from './job-outcome';
import { StageError, destinationError } from './stage-error';

/**
 * Each destination prepares its target; one that cannot is out of this delivery (its leg keeps the
 * error), the others load. probe() first: an unreachable one fails at once, as an outage, rather than
 * after a connect timeout inside its preparations.
 */
export async function prepareLegs(legs: Leg[], target: LoadTarget, added: string[]): Promise<void> {
  for (const leg of legs) {
    const d = leg.destination;
    const down = await d.probe(target).then(
      () => null,
      (err: unknown) => err,
    );
    if (down !== null) {
      leg.error = destinationError(d.processName, down);
      continue;
    }
    if (added.length > 0 && !d.capabilities.schemaEvolution) {
      leg.error = new StageError(
        d.processName,
        `${d.name} cannot take new columns (${added.slice(0, 5).join(', ')}): it does not evolve its schema`,
      );
      continue;
    }
    await d.prepare(target).catch((err: unknown) => {
      leg.error = destinationError(d.processName, err);
    });
  }
}
