export type ArchiveKind = 'zip' | 'tar' | 'tar.gz' | 'gz';

export function archiveKind(filename: string): ArchiveKind | null {
  const lower = filename.toLowerCase();
  if (lower.endsWith('.zip') || lower.endsWith('.jar')) return 'zip';
  if (lower.endsWith('.tar')) return 'tar';
  if (lower.endsWith('.tar.gz') || lower.endsWith('.tgz')) return 'tar.gz';
  if (lower.endsWith('.gz')) return 'gz';
  return null;
}
