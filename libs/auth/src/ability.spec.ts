import { buildAbility, canOn, canSome, isLegacy } from './ability';
import { parseCapability, validateCapabilities } from './capability';
import { ROLE_CAPABILITIES, TEMPLATES } from './templates';

describe('capability strings', () => {
  it('parses resource:action[:scope]', () => {
    expect(parseCapability('pipeline:read')).toEqual({ resource: 'pipeline', action: 'read', scope: null });
    expect(parseCapability('pipeline:read:catalog=sales')).toEqual({
      resource: 'pipeline',
      action: 'read',
      scope: { key: 'catalog', value: 'sales' },
    });
    expect(parseCapability('*:*')).toEqual({ resource: 'all', action: 'manage', scope: null });
  });

  it.each([
    ['pipeline', /resource:action/],
    ['pipeline:read:catalog=a:x', /resource:action/],
    ['pipelines:read', /unknown resource 'pipelines'/],
    ['pipeline:write', /unknown action 'write'/],
    ['pipeline:read:name=orders', /scope must be key=value/],
    ['pipeline:read:catalog=', /not a valid name/],
    ['pipeline:read:owner=bob', /owner=self/],
  ])('refuses %s', (text, reason) => {
    expect(parseCapability(text)).toMatch(reason);
  });

  it('names every bad entry of a list', () => {
    expect(() => validateCapabilities(['job:read', 'bad', 'x:y'])).toThrow(/capabilities\[1\]/);
    try {
      validateCapabilities(['job:read', 'bad', 'x:y']);
    } catch (e) {
      expect((e as { details: { field: string }[] }).details.map((d) => d.field)).toEqual([
        'capabilities[1]',
        'capabilities[2]',
      ]);
    }
    expect(() => validateCapabilities([])).toThrow(/at least one/);
  });

  it('every template and role grants only valid capabilities', () => {
    for (const caps of [...Object.values(TEMPLATES), ...Object.values(ROLE_CAPABILITIES)]) {
      for (const c of caps) expect(typeof parseCapability(c)).toBe('object');
    }
  });
});

describe('abilities (CASL)', () => {
  it('a scoped capability allows its container only, and never an unscoped (environment-wide) act', () => {
    const a = buildAbility(['pipeline:read:catalog=a', 'job:read'], 'k');
    expect(canSome(a, 'read', 'pipeline')).toBe(true);
    expect(canOn(a, 'read', 'pipeline', { catalog: 'a' })).toBe(true);
    expect(canOn(a, 'read', 'pipeline', { catalog: 'b' })).toBe(false);
    expect(canOn(a, 'read', 'pipeline', { catalog: null })).toBe(false);
    expect(canOn(a, 'read', 'pipeline', {})).toBe(false);
    expect(canOn(a, 'read', 'job', { catalog: 'b' })).toBe(true);
    expect(canSome(a, 'update', 'pipeline')).toBe(false);
  });

  it('wildcards: resource:*, *:action and *:* (legacy)', () => {
    const a = buildAbility(['search:*', '*:read'], 'k');
    expect(canOn(a, 'vector', 'search', {})).toBe(true);
    expect(canOn(a, 'read', 'secret', {})).toBe(true);
    expect(canOn(a, 'delete', 'secret', {})).toBe(false);
    expect(isLegacy(['search:*'])).toBe(false);
    const full = buildAbility(['*:*'], 'k');
    expect(canOn(full, 'delete', 'key', {})).toBe(true);
    expect(isLegacy(['job:read', '*:*'])).toBe(true);
  });

  it('owner=self compares the owner with the identity', () => {
    const a = buildAbility(['tap:update:owner=self'], 'session:maria');
    expect(canOn(a, 'update', 'tap', { owner: 'session:maria' })).toBe(true);
    expect(canOn(a, 'update', 'tap', { owner: 'session:bob' })).toBe(false);
  });

  it('roles: viewer reads only, editor creates/updates/runs but administers nothing, admin is full access', () => {
    const viewer = buildAbility(ROLE_CAPABILITIES.viewer, 'session:v');
    const editor = buildAbility(ROLE_CAPABILITIES.editor, 'session:e');
    const admin = buildAbility(ROLE_CAPABILITIES.admin, 'session:a');
    expect(canOn(viewer, 'read', 'pipeline', {})).toBe(true);
    expect(canOn(viewer, 'update', 'pipeline', {})).toBe(false);
    expect(canOn(editor, 'update', 'pipeline', {})).toBe(true);
    expect(canOn(editor, 'run', 'tap', {})).toBe(true);
    expect(canOn(editor, 'read', 'key', {})).toBe(false);
    expect(canOn(editor, 'create', 'user', {})).toBe(false);
    expect(canOn(admin, 'create', 'user', {})).toBe(true);
  });
});
