import { archiveKind } from './kinds';
import { Extraction, quote } from './extraction';

// The same admission rules for every format.

export type EntryType =
  'file' | 'directory' | 'symlink' | 'hardlink' | 'device' | 'fifo' | 'socket' | 'other';

const TYPE_REFUSALS: Partial<Record<EntryType, string>> = {
  symlink: 'is a symbolic link',
  hardlink: 'is a hard link',
  device: 'is a device file',
  fifo: 'is a FIFO',
  socket: 'is a socket',
};

/** Returns the normalised name when the entry is to be written, null when it is ignored or skipped. */
export function admit(x: Extraction, rawName: string, type: EntryType): string | null {
  x.entries += 1;
  if (x.entries > x.limits.maxEntries) throw x.refuse(`it has more than ${x.limits.maxEntries} entries`);
  const name = safeName(x, rawName);
  const refusal = TYPE_REFUSALS[type];
  if (refusal) throw x.refuse(`entry ${quote(name)} ${refusal}`);
  if (type === 'directory' || name === '' || rawName.endsWith('/')) return null;
  if (isMetadata(name)) return skip(x, name, 'metadata');
  if (type !== 'file') return skip(x, name, 'unsupported entry type');
  if (archiveKind(name) !== null) {
    throw x.refuse(
      `entry ${quote(name)} is itself an archive, and archives inside archives are not extracted`,
    );
  }
  if (!x.accept(name)) return skip(x, name, 'unsupported file type');
  return name;
}

function skip(x: Extraction, name: string, reason: string): null {
  x.skipped.push({ name, reason });
  return null;
}

/** Refuses names that could address anything outside the archive's own tree; drops '', '.' segments. */
function safeName(x: Extraction, rawName: string): string {
  if (rawName.includes('\0')) throw x.refuse(`entry ${quote(rawName)} has a NUL character in its name`);
  const slashed = rawName.replace(/\\/g, '/');
  // Covers '/x', '\\server\x' (now '//server/x') and drive letters, including drive-relative 'C:x'.
  if (slashed.startsWith('/') || /^[A-Za-z]:/.test(slashed)) {
    throw x.refuse(`entry ${quote(rawName)} has an absolute path`);
  }
  const segments = slashed.split('/');
  if (segments.includes('..')) throw x.refuse(`entry ${quote(rawName)} escapes the archive`);
  return segments.filter((s) => s !== '' && s !== '.').join('/');
}

function isMetadata(name: string): boolean {
  const segments = name.split('/');
  const last = segments[segments.length - 1];
  return segments[0] === '__MACOSX' || last.startsWith('._') || last === '.DS_Store';
}
