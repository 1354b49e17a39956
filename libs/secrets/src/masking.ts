/** Field names whose values the Secrets API never returns (spec: Secret). */
export const MASKED_FIELDS: ReadonlySet<string> = new Set([
  'password',
  'apikey',
  'secretkey',
  'token',
  'secret',
]);

/** Eight U+2022 bullets. */
export const MASK = '\u2022'.repeat(8);

export function isMaskedField(field: string): boolean {
  return MASKED_FIELDS.has(field.toLowerCase());
}

export function maskFields(fields: Record<string, string>): Record<string, string> {
  // fromEntries defines own properties: a field named __proto__ stays a field, not a prototype.
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, isMaskedField(k) ? MASK : v]));
}
