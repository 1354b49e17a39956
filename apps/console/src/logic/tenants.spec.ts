import { tenantRefusal } from './tenants';

describe('tenant administration in the console', () => {
  it('is offered to full access only, not to a key that may merely create keys', () => {
    expect(tenantRefusal({ kind: 'key', capabilities: ['*:*'] })).toBeNull();
    expect(tenantRefusal({ kind: 'anonymous', capabilities: [] })).toBeNull();
    expect(tenantRefusal({ kind: 'key', capabilities: ['key:*', 'key:create'] })).toBe(
      'Administering tenants needs full access (*:*) in the operator environment.',
    );
    expect(tenantRefusal(null)).toBe('Not signed in.');
  });
});
