import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export interface SealedSecret {
  keyId: string;
  nonce: Buffer;
  ciphertext: Buffer;
  authTag: Buffer;
}

/**
 * AES-256-GCM under the master key. Every seal draws a fresh 96-bit nonce. The environment and name
 * are bound as associated data, so a ciphertext copied onto another row fails to open.
 */
export class SecretCipher {
  readonly keyId: string;

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the master key must be 32 bytes');
    // Identifies which key sealed a row (for rotation and clear errors) without revealing it.
    this.keyId = createHash('sha256').update('tapyard-key-id').update(key).digest('hex').slice(0, 16);
  }

  seal(plaintext: string, environment: string, name: string): SealedSecret {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(aad(environment, name));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { keyId: this.keyId, nonce, ciphertext, authTag: cipher.getAuthTag() };
  }

  /** Throws when the key is wrong or the row was tampered with. */
  open(sealed: SealedSecret, environment: string, name: string): string {
    const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.nonce);
    decipher.setAAD(aad(environment, name));
    decipher.setAuthTag(sealed.authTag);
    return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8');
  }
}

function aad(environment: string, name: string): Buffer {
  return Buffer.from(`tapyard-secret\u0000${environment}\u0000${name}`, 'utf8');
}
