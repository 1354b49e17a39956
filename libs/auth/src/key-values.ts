import { Inject, Injectable } from '@nestjs/common';
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { CONFIG, TapyardConfig } from '@tapyard/core';

/** 32 random bytes (256 bits) in base64url after a recognisable prefix, so leaked keys are greppable. */
export function newKeyValue(): string {
  return `tpy_${randomBytes(32).toString('base64url')}`;
}

/**
 * SHA-256 of a random token (session ids): enough for values of 256 random bits, which no one can
 * guess from their digest. Key digests written before HMAC were this too ("legacy" below).
 */
export function tokenDigest(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

const HMAC_PREFIX = 'hmac:';
const LEGACY_DIGEST = /^[0-9a-f]{64}$/;
const HMAC_DIGEST = /^hmac:[0-9a-f]{64}$/;

/** A presented key value, digested both ways so it can be compared with stored digests of either format. */
export interface PresentedKey {
  hmac: string;
  legacy: string;
}

/** A stored digest from before HMAC: plain SHA-256 of the value, which a guessable value falls to. */
export function isLegacyDigest(stored: string): boolean {
  return LEGACY_DIGEST.test(stored);
}

export function isHmacDigest(stored: string): boolean {
  return HMAC_DIGEST.test(stored);
}

/**
 * Compares one stored digest with a presented key in constant time: exactly one `timingSafeEqual`
 * per call whatever the digests hold, so a loop over every stored digest reveals nothing by timing.
 */
export function matchesDigest(stored: string, presented: PresentedKey): boolean {
  const expected = isLegacyDigest(stored) ? presented.legacy : presented.hmac;
  const x = Buffer.from(expected, 'utf8');
  const y = Buffer.from(stored, 'utf8');
  // Equal lengths for timingSafeEqual; a stored value of another length compares against itself.
  return timingSafeEqual(x.length === y.length ? x : y, y) && x.length === y.length;
}

/**
 * A 256-bit key of its own for one purpose (HKDF from the master key): the AES key of the secrets is
 * never used for anything else, and no two digests share a key.
 */
export function derivedKey(masterKey: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), purpose, 32));
}

/**
 * Digests of API-key values: HMAC-SHA-256 under a key derived from the master key, stored as
 * `hmac:<hex>`. A leaked key map (or tenant mapping) then yields nothing to a dictionary attack on
 * short or guessable values such as a hand-picked bootstrap key, unless the master key leaks too.
 */
@Injectable()
export class KeyDigests {
  private readonly key: Buffer;

  constructor(@Inject(CONFIG) config: Pick<TapyardConfig, 'masterKey'>) {
    this.key = derivedKey(config.masterKey, 'tapyard api-key digest');
  }

  digest(value: string): string {
    return HMAC_PREFIX + createHmac('sha256', this.key).update(value, 'utf8').digest('hex');
  }

  presented(value: string): PresentedKey {
    return { hmac: this.digest(value), legacy: tokenDigest(value) };
  }

  /** 16 hex digits of the digest: names a key in logs and identities, reveals nothing of its value. */
  shortId(value: string): string {
    return this.digest(value).slice(HMAC_PREFIX.length, HMAC_PREFIX.length + 16);
  }
}

/** An opaque random token (session ids, CSRF tokens). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}
