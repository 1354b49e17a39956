/**
 * Field names whose values the Secrets API never returns: the spec's five (spec: Secret), and the
 * credentials the platform reads under other names (Snowflake's `privateKey`). Compared in lower case.
 */
export const MASKED_FIELDS: ReadonlySet<string> = new Set([
  'password',
  'apikey',
  'secretkey',
  'token',
  'secret',
  'privatekey',
]);

/** Eight U+2022 bullets. */
export const MASK = '\u2022'.repeat(8);

export function isMaskedField(field: string): boolean {
  return MASKED_FIELDS.has(field.toLowerCase());
}

export function maskFields(fields: Record<string, string>): Record<string, string> {
  // fromEntries defines own properties: a field named __proto__ stays a field, not a prototype.
  return Object.fromEntries(
    Object.entries(fields).map(([k, v]) => [k, isMaskedField(k) ? MASK : maskUrlCredentials(v)]),
  );
}

const URL_START = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
/** Schemes whose URLs the WHATWG parser also ends the authority at a backslash in. */
const SPECIAL_SCHEMES = new Set(['http', 'https', 'ws', 'wss', 'ftp', 'file']);

/**
 * A URL-valued field (pgvector's `connectionString`, a store's or broker's `url`, a `baseUrl`) keeps
 * its shape with the userinfo password and credential-named query parameters masked
 * (`postgres://vec:••••••••@db:5432/vectors`), whatever the field is called: a password typed into a
 * URL is as secret as one in a `password` field. Any other value is returned as it is.
 */
export function maskUrlCredentials(value: string): string {
  const scheme = URL_START.exec(value)?.[0];
  if (!scheme) return value;
  const rest = value.slice(scheme.length);
  // Split where the WHATWG parser the platform's clients use splits: the authority ends at the first
  // / ? # (and \ for special schemes), the userinfo at the authority's last @. A value that parser
  // refuses may be a password holding one of those characters unencoded: there the last @ of all ends
  // the userinfo, so such a password is masked too.
  const parses = URL.canParse(value);
  const special = SPECIAL_SCHEMES.has(scheme.slice(0, -3).toLowerCase());
  const end = parses ? rest.search(special ? /[/?#\\]/ : /[/?#]/) : -1;
  const authority = end < 0 ? rest : rest.slice(0, end);
  const at = authority.lastIndexOf('@');
  const colon = at < 0 ? -1 : authority.slice(0, at).indexOf(':');
  const userinfo = colon < 0 ? authority : `${authority.slice(0, colon + 1)}${MASK}${authority.slice(at)}`;
  const tail = end < 0 ? '' : rest.slice(end);
  return `${scheme}${userinfo}${parses ? maskQuery(tail) : tail}`;
}

/** `?password=…&sslmode=require` → `?password=••••••••&sslmode=require`, for the masked names. */
function maskQuery(tail: string): string {
  const hash = tail.indexOf('#');
  const query = hash < 0 ? tail : tail.slice(0, hash);
  const masked = query.replace(/([?&])([^=&]*)=([^&]*)/g, (whole, sep: string, name: string) =>
    isMaskedField(decoded(name)) ? `${sep}${name}=${MASK}` : whole,
  );
  return hash < 0 ? masked : masked + tail.slice(hash);
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}
