import fc from 'fast-check';
import { buildAbility, canOn } from './ability';
import { ACTIONS, RESOURCES } from './capability';
import { heldOf, runKeyCapabilities, runKeyMayCall, tapGrant } from './run-keys';

const scopeValue = fc.constantFrom('a', 'b', 'sales');
const capability = fc
  .tuple(
    fc.constantFrom('*', ...RESOURCES),
    fc.constantFrom('*', ...ACTIONS),
    fc.option(fc.tuple(fc.constantFrom('catalog', 'database', 'type'), scopeValue), { nil: undefined }),
  )
  .map(([r, a, s]) => (s ? `${r}:${a}:${s[0]}=${s[1]}` : `${r}:${a}`));
const fields = fc.record({
  catalog: fc.option(scopeValue),
  database: fc.option(scopeValue),
  type: fc.option(scopeValue),
});

describe('tap grants and run keys', () => {
  it('keeps the run-relevant part of a capability list, each in its own scope', () => {
    expect(tapGrant(['pipeline:*:catalog=a', 'secret:*', 'job:read'])).toEqual([
      'pipeline:read:catalog=a',
      'pipeline:upload:catalog=a',
      'job:read',
    ]);
    expect(tapGrant(['*:*'])).toEqual([
      'pipeline:read',
      'job:read',
      'metadata:read',
      'search:query',
      'search:vector',
      'pipeline:upload',
      'document:upload',
    ]);
    expect(tapGrant(['document:upload:collection=hr', 'document:read', 'pipeline:upload'])).toEqual([
      'document:upload:collection=hr',
      'pipeline:upload',
    ]);
    expect(tapGrant(['document:*'])).toEqual(['document:upload']);
    expect(runKeyCapabilities(tapGrant(['*:*']))).not.toContain('pipeline:upload');
    expect(runKeyCapabilities(tapGrant(['*:*']))).not.toContain('document:upload');
  });

  it('never grants what the capabilities did not allow, for any resource and scope', () => {
    fc.assert(
      fc.property(fc.array(capability, { maxLength: 6 }), fields, (caps, f) => {
        const holder = buildAbility(caps, 'x');
        const granted = buildAbility(tapGrant(caps), 'x');
        for (const resource of RESOURCES) {
          for (const action of ACTIONS) {
            if (canOn(granted, action, resource, f)) expect(canOn(holder, action, resource, f)).toBe(true);
          }
        }
      }),
    );
  });

  it('narrows a grant to what a second caller holds, never widening it', () => {
    fc.assert(
      fc.property(
        fc.array(capability, { maxLength: 6 }),
        fc.array(capability, { maxLength: 6 }),
        fields,
        (a, b, f) => {
          const narrowed = heldOf(tapGrant(a), buildAbility(b, 'x'));
          expect(tapGrant(a)).toEqual(expect.arrayContaining(narrowed));
          const ability = buildAbility(narrowed, 'x');
          for (const resource of RESOURCES) {
            for (const action of ACTIONS) {
              if (canOn(ability, action, resource, f))
                expect(canOn(buildAbility(b, 'x'), action, resource, f)).toBe(true);
            }
          }
        },
      ),
    );
  });

  it('lets a run call its read-only routes only, under no other spelling', () => {
    expect(runKeyMayCall('GET', '/api/v1/pipelines')).toBe(true);
    expect(runKeyMayCall('GET', '/api/v1/pipelines/orders%20v2/codegen-scripts')).toBe(true);
    expect(runKeyMayCall('POST', '/api/v1/search/qdrant')).toBe(true);
    for (const [method, path] of [
      ['POST', '/api/v1/auth/login'],
      ['POST', '/api/v1/auth/logout'],
      ['GET', '/api/v1/auth/me'],
      ['POST', '/api/v1/pipelines'],
      ['DELETE', '/api/v1/pipeline'],
      ['GET', '/api/v1/keys'],
      ['GET', '/api/v1/pipelines/%2E%2E/codegen-scripts'],
      ['GET', '/api/v1/pipelines/a%2Fb/codegen-scripts'],
      ['GET', '/api/v1/pipelines/%E0%A4%A/codegen-scripts'],
      ['GET', '/api/v1/metadata/postgres'],
      ['GET', '/metrics'],
    ]) {
      expect([method, path, runKeyMayCall(method, path)]).toEqual([method, path, false]);
    }
  });
});
