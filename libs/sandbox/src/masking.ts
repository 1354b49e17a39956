export const SECRET_MASK = '***';
/** Shorter values would mask ordinary text ("a", "id") and reveal little anyway. */
export const MIN_SECRET_LENGTH = 3;

/** The values worth masking, longest first so a secret containing another is masked whole. */
export function maskableSecrets(secrets: readonly string[]): string[] {
  return [...new Set(secrets.filter((s) => s.length >= MIN_SECRET_LENGTH))].sort(
    (a, b) => b.length - a.length,
  );
}

/** Masks on assembled text only: a value split across two pipe chunks is still found. */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  let masked = text;
  for (const secret of maskableSecrets(secrets)) masked = masked.split(secret).join(SECRET_MASK);
  return masked;
}
