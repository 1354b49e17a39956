import { timingSafeEqual } from 'node:crypto';
import { TapyardConfig } from '@tapyard/core';
import { ApiKeysService, KeyRecord } from './api-keys.service';
import { hashKey, newKeyValue } from './key-values';
import { KeyUsage } from './key-usage';
import { SecretState } from './secret-state';

jest.mock('node:crypto', () => {
  const actual = jest.requireActual<typeof import('node:crypto')>('node:crypto');
  return { ...actual, timingSafeEqual: jest.fn(actual.timingSafeEqual) };
});
const compare = timingSafeEqual as jest.MockedFunction<typeof timingSafeEqual>;

function serviceWith(values: string[]): ApiKeysService {
  const fields: Record<string, string> = {};
  values.forEach((v, i) => {
    const r: KeyRecord = {
      label: `k${i}`,
      hash: hashKey(v),
      capabilities: ['job:read'],
      template: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      revokedAt: null,
      retired: [hashKey(`old-${v}`)],
    };
    fields[r.label] = JSON.stringify(r);
  });
  const state = { read: async () => fields } as unknown as SecretState;
  const usage = { touch: () => undefined } as unknown as KeyUsage;
  return new ApiKeysService(state, usage, {} as TapyardConfig);
}

describe('API key values and matching', () => {
  it('values are tpy_ + 256 random bits, never repeated', () => {
    const v = newKeyValue();
    expect(v).toMatch(/^tpy_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(v.slice(4), 'base64url')).toHaveLength(32);
    expect(new Set(Array.from({ length: 1000 }, newKeyValue)).size).toBe(1000);
  });

  it('compares every stored digest in constant time, whatever matches and wherever it is', async () => {
    const values = Array.from({ length: 8 }, newKeyValue);
    const keys = serviceWith(values);
    const calls: number[] = [];
    for (const presented of [values[0], values[7], 'tpy_unknown', `old-${values[3]}`]) {
      compare.mockClear();
      await keys.match('env', presented);
      calls.push(compare.mock.calls.length);
    }
    // 8 current digests + 8 retired ones, for a first match, a last match, no match and a rotated one.
    expect(calls).toEqual([16, 16, 16, 16]);
  });

  it('tells active, rotated and unknown apart', async () => {
    const values = [newKeyValue(), newKeyValue()];
    const keys = serviceWith(values);
    expect(await keys.match('env', values[1])).toMatchObject({ status: 'active', record: { label: 'k1' } });
    expect(await keys.match('env', `old-${values[0]}`)).toEqual({ status: 'rotated', label: 'k0' });
    expect(await keys.match('env', newKeyValue())).toEqual({ status: 'unknown' });
  });
});
