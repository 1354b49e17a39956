import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EnvReader } from './env-reader';

export function parseMasterKey(text: string): Buffer | null {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) {
    const b = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (b.length === 32) return b;
  }
  return null;
}

/** TAPYARD_MASTER_KEY, else the file TAPYARD_MASTER_KEY_FILE (default `<data dir>/master.key`). */
export function readMasterKey(r: EnvReader, dataDir: string): Buffer {
  const inline = r.raw('TAPYARD_MASTER_KEY');
  if (inline !== undefined) {
    const key = parseMasterKey(inline);
    if (!key) r.problems.push('TAPYARD_MASTER_KEY must be 32 bytes as 64 hex characters or base64');
    return key ?? Buffer.alloc(32);
  }
  const file = r.string('TAPYARD_MASTER_KEY_FILE', join(dataDir, 'master.key'));
  if (!existsSync(file)) {
    r.problems.push(
      `TAPYARD_MASTER_KEY is not set and TAPYARD_MASTER_KEY_FILE (${file}) does not exist: ` +
        'set one of them, or run `npm run up`, which generates a key file',
    );
    return Buffer.alloc(32);
  }
  const key = parseMasterKey(readFileSync(file, 'utf8'));
  if (!key)
    r.problems.push(`TAPYARD_MASTER_KEY_FILE (${file}) must hold 32 bytes as 64 hex characters or base64`);
  return key ?? Buffer.alloc(32);
}
