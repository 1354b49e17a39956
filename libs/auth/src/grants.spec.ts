import fc from 'fast-check';
import { ForbiddenError } from '@tapyard/core';
import { assertMayGrant, buildAbility, canOn, canSome } from './ability';
import { ACTIONS, RESOURCES, uncovered } from './capability';
import { ROLE_CAPABILITIES, TEMPLATES } from './templates';

const ID = 'session:someone';

/** Capability strings over every resource and action, `*`, and a few scopes (small pools, so they collide). */
const capability = fc
  .tuple(
    fc.constantFrom<string>(...RESOURCES, '*'),
    fc.constantFrom<string>(...ACTIONS, '*'),
    fc.option(
      fc.oneof(
        fc.tuple(fc.constantFrom('catalog', 'database', 'collection', 'type'), fc.constantFrom('a', 'b')),
        fc.constant(['owner', 'self'] as const),
      ),
      { nil: null },
    ),
  )
  .map(([r, a, s]) => (s === null ? `${r}:${a}` : `${r}:${a}:${s[0]}=${s[1]}`));
const capabilities = fc.array(capability, { minLength: 1, maxLength: 6 });

/** One capability made narrower the ways `covers` allows: a named resource or action for `*`, an added scope. */
const narrowed = (text: string) =>
  fc
    .tuple(
      fc.constantFrom<string>(...RESOURCES),
      fc.constantFrom<string>(...ACTIONS),
      fc.option(fc.constantFrom('catalog=a', 'database=b', 'owner=self'), { nil: null }),
    )
    .map(([r, a, s]) => {
      const [resource, action, scope] = text.split(':');
      return [resource === '*' ? r : resource, action === '*' ? a : action, scope ?? s]
        .filter((p) => p !== null && p !== undefined)
        .join(':');
    });

/** A holder and a set it may grant: some of its capabilities, each kept or narrowed. */
const holderAndGrant = capabilities.chain((held) =>
  fc
    .subarray(held, { minLength: 1 })
    .chain((picked) => fc.tuple(...picked.map((c) => fc.oneof(fc.constant(c), narrowed(c)))))
    .map((wanted) => [held, wanted] as const),
);

/** The fields of a concrete resource that scopes are checked against. */
const fields = fc.record(
  {
    catalog: fc.constantFrom('a', 'b', null),
    database: fc.constantFrom('a', 'b', null),
    collection: fc.constantFrom('a', 'b', null),
    type: fc.constantFrom('a', 'b', null),
    owner: fc.constantFrom(ID, 'session:other', null),
  },
  { requiredKeys: [] },
);

/** One capability made wider, or moved sideways: `*` for the resource or action, scope dropped or changed. */
const widened = (text: string) =>
  fc.constantFrom('resource', 'action', 'scope', 'other-scope').map((how) => {
    const [resource, action, scope] = text.split(':');
    if (how === 'resource') return [`*`, action, scope].filter(Boolean).join(':');
    if (how === 'action') return [resource, '*', scope].filter(Boolean).join(':');
    if (how === 'scope' || scope === undefined) return `${resource}:${action}`;
    return `${resource}:${action}:${scope === 'catalog=a' ? 'catalog=b' : 'catalog=a'}`;
  });

/** A holder and a set near it: some of its capabilities, some widened, some foreign. */
const holderAndNearby = capabilities.chain((held) =>
  fc
    .array(fc.oneof(fc.constantFrom(...held), fc.constantFrom(...held).chain(widened), capability), {
      minLength: 1,
      maxLength: 4,
    })
    .map((wanted) => [held, wanted] as const),
);

describe('grant only what you hold (covers)', () => {
  it.each([
    [['*:*'], ['*:*', 'key:*', 'pipeline:read:catalog=a'], []],
    [['key:create'], ['*:*'], ['*:*']],
    [['pipeline:*'], ['pipeline:read', 'pipeline:*', '*:read'], ['*:read']],
    [['*:read'], ['pipeline:read', 'secret:read:catalog=a', 'pipeline:*'], ['pipeline:*']],
    [['pipeline:read'], ['pipeline:read:catalog=a', 'pipeline:read:owner=self'], []],
    [['pipeline:read:catalog=a'], ['pipeline:read'], ['pipeline:read']],
    [
      ['pipeline:read:catalog=a'],
      ['pipeline:read:catalog=b', 'pipeline:read:database=a'],
      ['pipeline:read:catalog=b', 'pipeline:read:database=a'],
    ],
    [['pipeline:read:catalog=a'], ['pipeline:read:catalog=a'], []],
    [
      [
        'pipeline:read',
        'pipeline:create',
        'pipeline:update',
        'pipeline:delete',
        'pipeline:upload',
        'pipeline:run',
        'pipeline:vector',
        'pipeline:query',
      ],
      ['pipeline:*'],
      ['pipeline:*'],
    ],
    [['pipeline:read'], ['not-a-capability'], ['not-a-capability']],
    [['bogus', 'job:read'], ['job:read'], []],
  ])('held %j, wanted %j: lacks %j', (held, wanted, lacking) => {
    expect(uncovered(held, wanted)).toEqual(lacking);
  });

  it('templates and roles: only full access grants full access; ops cannot make keys or admins', () => {
    expect(uncovered(TEMPLATES.ops, TEMPLATES['full-access'])).toEqual(['*:*']);
    expect(uncovered(TEMPLATES['rag-builder'], TEMPLATES['read-only'])).toEqual([]);
    expect(uncovered(ROLE_CAPABILITIES.editor, ROLE_CAPABILITIES.viewer)).toEqual([]);
    expect(uncovered(ROLE_CAPABILITIES.viewer, ROLE_CAPABILITIES.editor)).not.toEqual([]);
    expect(uncovered(ROLE_CAPABILITIES.admin, [...Object.values(TEMPLATES).flat()])).toEqual([]);
  });

  it('assertMayGrant answers 403 naming what the caller lacks (at most five, then a count)', () => {
    expect(() =>
      assertMayGrant({ name: 'k', capabilities: ['*:*'] }, ['key:*'], 'issue this key'),
    ).not.toThrow();
    const refuse = (wanted: string[]) => {
      try {
        assertMayGrant({ name: 'maker', capabilities: ['key:create', 'job:read'] }, wanted, 'issue this key');
      } catch (e) {
        expect(e).toBeInstanceOf(ForbiddenError);
        return (e as Error).message;
      }
      throw new Error('not refused');
    };
    expect(refuse(['job:read', '*:*'])).toBe("'maker' cannot issue this key: it lacks *:*");
    expect(refuse([...TEMPLATES['read-only']])).toBe(
      "'maker' cannot issue this key: it lacks pipeline:read, tap:read, config:read, metadata:read, platform:read",
    );
    expect(refuse([...TEMPLATES.ops])).toMatch(
      /lacks platform:\*, job:\*, pipeline:read, pipeline:upload, tap:read and 4 more$/,
    );
  });

  it('property: a granted set never allows an action on a subject the grantor may not act on', () => {
    fc.assert(
      fc.property(
        holderAndGrant,
        fc.array(fields, { minLength: 1, maxLength: 4 }),
        ([held, wanted], samples) => {
          expect(uncovered(held, wanted)).toEqual([]);
          const holder = buildAbility(held, ID);
          const grantee = buildAbility(wanted, ID);
          for (const resource of RESOURCES) {
            for (const action of ACTIONS) {
              if (canSome(grantee, action, resource)) expect(canSome(holder, action, resource)).toBe(true);
              for (const f of [{}, ...samples]) {
                if (canOn(grantee, action, resource, f))
                  expect(canOn(holder, action, resource, f)).toBe(true);
              }
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: when the granted set allows more than the grantor, the grant is refused', () => {
    fc.assert(
      fc.property(holderAndNearby, fields, ([held, wanted], f) => {
        const holder = buildAbility(held, ID);
        const grantee = buildAbility(wanted, ID);
        const wider = RESOURCES.some((r) =>
          ACTIONS.some((a) => canOn(grantee, a, r, f) && !canOn(holder, a, r, f)),
        );
        if (wider) expect(uncovered(held, wanted)).not.toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('property: everyone may grant what they hold; *:* is granted by *:* holders only', () => {
    fc.assert(
      fc.property(capabilities, capabilities, (held, wanted) => {
        expect(uncovered(held, held)).toEqual([]);
        expect(uncovered(['*:*'], wanted)).toEqual([]);
        expect(uncovered(held, ['*:*']).length === 0).toBe(held.includes('*:*'));
        // Holding more never makes a grant fail.
        for (const c of uncovered([...held, ...wanted.slice(1)], wanted)) {
          expect(uncovered(held, wanted)).toContain(c);
        }
      }),
      { numRuns: 300 },
    );
  });
});
