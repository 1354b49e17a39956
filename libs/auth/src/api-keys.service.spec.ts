import { createHash, timingSafeEqual } from 'node:crypto';
import { Logger } from 'pino';
import { TapyardConfig } from '@tapyard/core';
import { SecretFields, TENANT_MAPPINGS_SECRET, apiKeysSecretName } from '@tapyard/secrets';
import { ApiKeysService, KeyRecord } from './api-keys.service';
import { KeyDigests, newKeyValue } from './key-values';
import { KeyUsage } from './key-usage';
import { SecretState } from './secret-state';
import { TenantsService } from './tenants.service';

jest.mock('node:crypto', () => {
  const actual = jest.requireActual<typeof import('node:crypto')>('node:crypto');
  return { ...actual, timingSafeEqual: jest.fn(actual.timingSafeEqual) };
});
const compare = timingSafeEqual as jest.MockedFunction<typeof timingSafeEqual>;

const MASTER = Buffer.alloc(32, 7);
const digests = new KeyDigests({ masterKey: MASTER });
const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');

/** Keys k0..kn; `legacy` lists the indexes stored as SHA-256 digests from before HMAC. */
function serviceWith(
  values: string[],
  legacy: number[] = [],
): { keys: ApiKeysService; fields: SecretFields } {
  const fields: SecretFields = {};
  values.forEach((v, i) => {
    const digest = legacy.includes(i) ? sha256 : (x: string) => digests.digest(x);
    const r: KeyRecord = {
      label: `k${i}`,
      hash: digest(v),
      capabilities: ['job:read'],
      template: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      revokedAt: null,
      retired: [digest(`old-${v}`)],
    };
    fields[r.label] = JSON.stringify(r);
  });
  const state = {
    read: async () => fields,
    mutate: async (_e: string, _n: string, change: (f: SecretFields) => unknown) => change(fields),
  } as unknown as SecretState;
  const usage = { touch: () => undefined } as unknown as KeyUsage;
  const logger = { info: () => undefined, warn: () => undefined } as unknown as Logger;
  const config = { environment: 'env', auth: { multiTenant: false } } as TapyardConfig;
  const tenants = new TenantsService(state, digests, config, logger);
  return { keys: new ApiKeysService(state, usage, digests, tenants, config, logger), fields };
}

describe('API key values and matching', () => {
  it('values are tpy_ + 256 random bits, never repeated', () => {
    const v = newKeyValue();
    expect(v).toMatch(/^tpy_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(v.slice(4), 'base64url')).toHaveLength(32);
    expect(new Set(Array.from({ length: 1000 }, newKeyValue)).size).toBe(1000);
  });

  it('digests are HMAC-SHA-256 under a key derived from the master key, not a bare SHA-256', () => {
    const d = digests.digest('guessable-bootstrap-value-1234');
    expect(d).toMatch(/^hmac:[0-9a-f]{64}$/);
    expect(d).not.toContain(sha256('guessable-bootstrap-value-1234'));
    expect(
      new KeyDigests({ masterKey: Buffer.alloc(32, 8) }).digest('guessable-bootstrap-value-1234'),
    ).not.toBe(d);
    expect(digests.digest('guessable-bootstrap-value-1234')).toBe(d);
  });

  it('compares every stored digest in constant time, whatever matches, wherever, in either format', async () => {
    const values = Array.from({ length: 8 }, newKeyValue);
    const { keys } = serviceWith(values, [2, 5]);
    const calls: number[] = [];
    for (const presented of [values[0], values[7], 'tpy_unknown', `old-${values[3]}`, `old-${values[5]}`]) {
      compare.mockClear();
      await keys.match('env', presented);
      calls.push(compare.mock.calls.length);
    }
    // 8 current digests + 8 retired ones, for a first match, a last match, no match and rotated ones.
    expect(calls).toEqual([16, 16, 16, 16, 16]);
  });

  it('tells active, rotated and unknown apart', async () => {
    const values = [newKeyValue(), newKeyValue()];
    const { keys } = serviceWith(values, [0]);
    expect(await keys.match('env', values[1])).toMatchObject({ status: 'active', record: { label: 'k1' } });
    expect(await keys.match('env', `old-${values[0]}`)).toEqual({ status: 'rotated', label: 'k0' });
    expect(await keys.match('env', newKeyValue())).toEqual({ status: 'unknown' });
  });

  it('a key stored under a SHA-256 digest authenticates and is rewritten as HMAC', async () => {
    const values = [newKeyValue(), newKeyValue()];
    const { keys, fields } = serviceWith(values, [0]);
    expect(await keys.match('env', values[0])).toMatchObject({ status: 'active', record: { label: 'k0' } });
    const record = JSON.parse(fields.k0) as KeyRecord;
    expect(record.hash).toBe(digests.digest(values[0]));
    expect(record.retired).toEqual([sha256(`old-${values[0]}`)]); // not presented, so not known
    expect(await keys.match('env', values[0])).toMatchObject({ status: 'active' });
  });
});

describe('keys of a tenant environment', () => {
  /** Secrets per environment and name, as the real store keeps them; `failing` names one whose writes fail. */
  function tenantSetup() {
    const secrets = new Map<string, SecretFields>();
    const at = (e: string, n: string) => {
      const key = `${e}/${n}`;
      if (!secrets.has(key)) secrets.set(key, {});
      return secrets.get(key)!;
    };
    const failing = { name: '' };
    const state = {
      read: async (e: string, n: string) => ({ ...at(e, n) }),
      mutate: async (e: string, n: string, change: (f: SecretFields) => unknown) => {
        if (n === failing.name) throw new Error(`secret store unavailable for ${n}`);
        const copy = { ...at(e, n) };
        await change(copy);
        secrets.set(`${e}/${n}`, copy);
      },
    } as unknown as SecretState;
    const usage = { touch: () => undefined, lastUsed: async () => new Map() } as unknown as KeyUsage;
    const logger = { info: () => undefined, warn: () => undefined } as unknown as Logger;
    const config = { environment: 'op', auth: { multiTenant: true } } as TapyardConfig;
    const tenants = new TenantsService(state, digests, config, logger);
    const keys = new ApiKeysService(state, usage, digests, tenants, config, logger);
    const root = { capabilities: ['*:*'] } as never;
    return { keys, tenants, failing, root };
  }

  it('a rotation whose tenant mapping cannot be written leaves the old value working', async () => {
    const { keys, tenants, failing, root } = tenantSetup();
    const issued = await keys.issue('acme', 'loader', { capabilities: ['job:read'] }, root);
    expect(await tenants.tenantOf(issued.key)).toBe('acme');

    failing.name = TENANT_MAPPINGS_SECRET;
    await expect(keys.rotate('acme', 'loader', root)).rejects.toThrow(/unavailable/);
    failing.name = '';
    expect(await keys.match('acme', issued.key)).toMatchObject({ status: 'active' });
    expect(await tenants.tenantOf(issued.key)).toBe('acme');

    const rotated = await keys.rotate('acme', 'loader', root);
    expect(await tenants.tenantOf(rotated.key)).toBe('acme');
    expect(await keys.match('acme', rotated.key)).toMatchObject({ status: 'active' });
    expect(await keys.match('acme', issued.key)).toEqual({ status: 'rotated', label: 'loader' });
  });

  it('a key record that cannot be committed leaves no mapping behind', async () => {
    const { keys, tenants, failing, root } = tenantSetup();
    await keys.issue('acme', 'loader', { capabilities: ['job:read'] }, root);
    const before = await keys.list('acme');
    // A label clash and a failing key map: neither leaves a mapped digest of the value never given out.
    await expect(keys.issue('acme', 'loader', { capabilities: ['job:read'] }, root)).rejects.toThrow(
      /already exists/,
    );
    failing.name = apiKeysSecretName('acme');
    await expect(keys.issue('acme', 'other', { capabilities: ['job:read'] }, root)).rejects.toThrow();
    failing.name = '';
    expect(await keys.list('acme')).toEqual(before);
    const state = (tenants as unknown as { state: SecretState }).state;
    expect(Object.keys(await state.read('op', TENANT_MAPPINGS_SECRET))).toHaveLength(1);
  });
});
