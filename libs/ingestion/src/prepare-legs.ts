import { LoadTarget } from '@tapyard/destinations';
import { Leg } from './job-outcome';
import { StageError, destinationError } from './stage-error';

/** Each leg's probe, started: what it threw, or null when the destination answered. */
export type Probes = Promise<unknown>[];

/**
 * Probes every leg's destination now. A probe reads only the destination section (its address, its
 * secret), which the plan never changes, so the runner starts them with the job and they overlap the
 * first part's read and the plan instead of following them (a REST endpoint's HEAD, a broker's
 * connect: tens of milliseconds before a sink's first row).
 */
export function startProbes(legs: Leg[], target: LoadTarget): Probes {
  return legs.map((leg) =>
    leg.destination.probe(target).then(
      () => null,
      (err: unknown) => err,
    ),
  );
}

/**
 * Each destination prepares its target; one that cannot is out of this delivery (its leg keeps the
 * error), the others load. Its probe first: an unreachable one fails at once, as an outage, rather
 * than after a connect timeout inside its preparations.
 */
export async function prepareLegs(
  legs: Leg[],
  target: LoadTarget,
  added: string[],
  probes: Probes,
): Promise<void> {
  for (const [i, leg] of legs.entries()) {
    const d = leg.destination;
    const down = await probes[i];
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
    await d.prepare(target).then(
      (shape) => (leg.shape = shape ?? null),
      (err: unknown) => {
        leg.error = destinationError(d.processName, err);
      },
    );
  }
}
