import { PackageSpecError } from './errors';
import { normalizePackageSpec, normalizePackageSpecs } from './package-specs';

describe('package specs', () => {
  it('normalises names, extras and clauses', () => {
    expect(normalizePackageSpec(' Six == 1.16.0 ')).toBe('six==1.16.0');
    expect(normalizePackageSpec('Requests[Socks, security]>=2.0,<3')).toBe(
      'requests[security,socks]<3,>=2.0',
    );
    expect(normalizePackageSpec('zope.Interface~=6.0')).toBe('zope-interface~=6.0');
    expect(normalizePackageSpec('numpy')).toBe('numpy');
  });

  it('sorts and de-duplicates', () => {
    expect(normalizePackageSpecs(['six==1.16.0', 'attrs', 'SIX == 1.16.0'])).toEqual([
      'attrs',
      'six==1.16.0',
    ]);
    expect(normalizePackageSpecs([])).toEqual([]);
  });

  it('refuses the same package with different requirements', () => {
    expect(() => normalizePackageSpecs(['six==1.16.0', 'six==1.15.0'])).toThrow(/listed twice/);
  });

  it.each([
    '--index-url=http://evil',
    '-r requirements.txt',
    '../x',
    '/tmp/pkg.whl',
    'git+https://github.com/x/y',
    'pkg @ https://example.com/pkg.whl',
    'six==1.16.0; python_version>"3"',
    'six==1.16.0 --hash=sha256:abc',
    'https://user:pw@example.com/simple/six',
    '',
    'a'.repeat(201),
  ])('refuses %j', (spec) => {
    expect(() => normalizePackageSpecs([spec])).toThrow(PackageSpecError);
  });

  it('keeps credentials out of the refusal message', () => {
    expect(() => normalizePackageSpec('https://user:pw1234@example.com/six')).toThrow(
      /https:\/\/\*\*\*@example/,
    );
  });
});
