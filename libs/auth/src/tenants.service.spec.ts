import { createHash, timingSafeEqual } from 'node:crypto';
import { Logger } from 'pino';
import { TapyardConfig } from '@tapyard/core';
import { SecretFields } from '@tapyard/secrets';
import { KeyDigests, newKeyValue } from './key-values';
import { SecretState } from './secret-state';
import { TenantsService } from './tenants.service';

jest.mock('node:crypto', () => {
  const actual = jest.requireActual<typeof import('node:crypto')>('node:crypto');
  return { ...actual, timingSafeEqual: jest.fn(actual.timingSafeEqual) };
});
const compare = timingSafeEqual as jest.MockedFunction<typeof timingSafeEqual>;

const digests = new KeyDigests({ masterKey: Buffer.alloc(32, 3) });
const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');

function tenantsWith(fields: SecretFields): { tenants: TenantsService; warnings: string[] } {
  const warnings: string[] = [];
  const state = {
    read: async () => fields,
    mutate: async (_e: string, _n: string, change: (f: SecretFields) => unknown) => change(fields),
  } as unknown as SecretState;
  const logger = {
    info: () => undefined,
    warn: (_o: object, m: string) => warnings.push(m),
  } as unknown as Logger;
  const config = { environment: 'op' } as TapyardConfig;
  return { tenants: new TenantsService(state, digests, config, logger), warnings };
}

describe('tenant mappings', () => {
  const [hmac, legacy, plain, toOperator] = Array.from({ length: 4 }, newKeyValue);
  const fields = (): SecretFields => ({
    [digests.digest(hmac)]: 'acme',
    [sha256(legacy)]: 'globex',
    [plain]: 'initech',
    [digests.digest(toOperator)]: 'op',
  });

  it('compares every field in constant time, whatever its form and wherever the match is', async () => {
    const { tenants } = tenantsWith(fields());
    const calls: number[] = [];
    for (const v of [hmac, toOperator, 'tpy_unknown']) {
      compare.mockClear();
      await tenants.tenantOf(v);
      calls.push(compare.mock.calls.length);
    }
    expect(calls).toEqual([4, 4, 4]);
  });

  it('finds tenants by HMAC, SHA-256 and plain fields, and rewrites the latter two as HMAC', async () => {
    const map = fields();
    const { tenants } = tenantsWith(map);
    expect(await tenants.tenantOf(hmac)).toBe('acme');
    expect(await tenants.tenantOf(legacy)).toBe('globex');
    expect(await tenants.tenantOf(plain)).toBe('initech');
    expect(map).not.toHaveProperty(sha256(legacy));
    expect(map).not.toHaveProperty(plain);
    expect(map[digests.digest(plain)]).toBe('initech');
    expect(await tenants.tenantOf(plain)).toBe('initech');
  });

  it('ignores, with a warning, a mapping to the operator environment', async () => {
    const { tenants, warnings } = tenantsWith(fields());
    expect(await tenants.tenantOf(toOperator)).toBeNull();
    expect(warnings).toEqual([expect.stringMatching(/operator environment/)]);
    expect(() => tenants.validateTarget('op')).toThrow(/operator environment/);
  });
});
