import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 32 random bytes (256 bits) in base64url after a recognisable prefix, so leaked keys are greppable. */
export function newKeyValue(): string {
  return `tpy_${randomBytes(32).toString('base64url')}`;
}

/**
 * Key values carry ≥128 bits of entropy, so a fast hash is enough (a slow KDF protects guessable
 * passwords, not random tokens) and keeps per-request checks cheap.
 */
export function hashKey(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time equality of two hex digests of the same length. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** An opaque random token (session ids, CSRF tokens). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}
