import { randomBytes } from 'node:crypto';

export const SCRIPT_PREFIX = 'tap-scripts/';

/** Object key of a new script version: `tap-scripts/<name>_<suffix>.py`, the suffix free of `_`. */
export function newScriptKey(name: string): string {
  const stamp = new Date().toISOString().replace(/[-:.]/g, '').replace('Z', '');
  return `${SCRIPT_PREFIX}${name}_${stamp}-${randomBytes(3).toString('hex')}.py`;
}

/** Whether a key is one of this tap's script versions (tap `a` must not match tap `a_b`'s keys). */
export function isScriptOf(name: string, key: string): boolean {
  if (!key.startsWith(`${SCRIPT_PREFIX}${name}_`)) return false;
  return /^[A-Za-z0-9-]+\.py$/.test(key.slice(SCRIPT_PREFIX.length + name.length + 1));
}
