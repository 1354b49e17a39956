import { createHash, timingSafeEqual } from 'node:crypto';
import { Logger } from 'pino';
import { TapyardConfig } from '@tapyard/core';
import { SecretFields } from '@tapyard/secrets';
import { ApiKeysService, KeyRecord } from './api-keys.service';
import { KeyDigests, newKeyValue } from './key-values';
import { KeyUsage } from './key-usage';
import { SecretState } from './secret-state';

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
  return { keys: new ApiKeysService(state, usage, digests, {} as TapyardConfig, logger), fields };
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
