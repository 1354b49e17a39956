import { randomBytes } from 'node:crypto';
import { SecretCipher } from './secret-cipher';
import { MASK, maskFields } from './masking';

describe('SecretCipher', () => {
  const cipher = new SecretCipher(randomBytes(32));

  it('round-trips and draws a fresh nonce per seal', () => {
    const a = cipher.seal('{"password":"pw"}', 'dev', 'db');
    const b = cipher.seal('{"password":"pw"}', 'dev', 'db');
    expect(cipher.open(a, 'dev', 'db')).toBe('{"password":"pw"}');
    expect(a.nonce.equals(b.nonce)).toBe(false);
    expect(a.ciphertext.equals(b.ciphertext)).toBe(false);
    expect(a.keyId).toMatch(/^[0-9a-f]{16}$/);
  });

  it('refuses tampering, another row, and another key', () => {
    const s = cipher.seal('value', 'dev', 'db');
    const flipped = Buffer.from(s.ciphertext);
    flipped[0] ^= 1;
    expect(() => cipher.open({ ...s, ciphertext: flipped }, 'dev', 'db')).toThrow();
    expect(() => cipher.open(s, 'prod', 'db')).toThrow();
    expect(() => cipher.open(s, 'dev', 'other')).toThrow();
    expect(() => new SecretCipher(randomBytes(32)).open(s, 'dev', 'db')).toThrow();
  });

  it('needs a 32-byte key', () => {
    expect(() => new SecretCipher(randomBytes(16))).toThrow(/32 bytes/);
  });
});

describe('maskFields', () => {
  it('masks exactly the sensitive field names with eight bullets', () => {
    expect(
      maskFields({
        password: 'a',
        apiKey: 'b',
        secretKey: 'c',
        token: 'd',
        secret: 'e',
        user: 'f',
        tokenUrl: 'g',
      }),
    ).toEqual({
      password: MASK,
      apiKey: MASK,
      secretKey: MASK,
      token: MASK,
      secret: MASK,
      user: 'f',
      tokenUrl: 'g',
    });
    expect(MASK).toBe('••••••••');
    expect([...MASK]).toHaveLength(8);
  });
});
