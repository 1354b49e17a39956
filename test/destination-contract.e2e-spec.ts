import { Type } from '@nestjs/common';
import { Destination } from '@tapyard/destinations';
import { CONTRACT_FIXTURES, fixtureFor } from './support/destination-contract';
import {
  REGISTERED_LOADERS,
  contractShare,
  describeDestinationContract,
  describeTwoDestinations,
} from './support/destination-contract-suite';

/**
 * The destination contract (see test/support/destination-contract-suite.ts), first file: the fixture
 * checks, the loaders of contractShare('first') and the one-job-two-destinations case. The other
 * loaders run in test/destination-contract-sinks.e2e-spec.ts.
 */

describe('destination contract: fixtures', () => {
  it('a registered loader without a fixture fails the suite, saying to add one', () => {
    class UnfixturedDestination {}
    expect(() => fixtureFor(UnfixturedDestination as unknown as Type<Destination>)).toThrow(
      /UnfixturedDestination .*add a fixture .*test\/support\/destination-contract\.ts/,
    );
  });

  it('every fixture belongs to a registered loader (none left behind by a removed one)', () => {
    expect(
      [...CONTRACT_FIXTURES.keys()].filter((k) => !REGISTERED_LOADERS.includes(k)).map((k) => k.name),
    ).toEqual([]);
  });

  it('the two contract files share the registered loaders between them, each loader in one', () => {
    const first = contractShare('first');
    const second = contractShare('second');
    expect(first.length).toBeGreaterThan(0);
    expect(second.length).toBeGreaterThan(0);
    expect(first.filter((l) => second.includes(l))).toEqual([]);
    expect([...first, ...second].map((l) => l.name).sort()).toEqual(
      REGISTERED_LOADERS.map((l) => l.name).sort(),
    );
  });
});

describeDestinationContract(contractShare('first'));
describeTwoDestinations();
