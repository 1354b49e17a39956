/** `[^\s/@]*` from a given offset: what may stand between `://` and a credential's first `@`. */
const USERINFO = /[^\s/@]*/y;
/** A URL token from a given offset: free text ends a URL at whitespace, a quote or an angle bracket. */
const TOKEN = /[^\s"'`<>]*/y;

function isLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

/** A URL scheme's characters after its first letter: letters, digits, `+`, `.` and `-`. */
function isSchemeChar(c: number): boolean {
  return isLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2e || c === 0x2d;
}

/**
 * Whether `text[from, end)`, what stands between `://` and the first `/` with no `@` in it, reads as
 * `host[:port]` (its part before any `?` or `#` has no `:`, only digits after its last `:`, or ends
 * an IPv6 literal's `]`). When it does not (`u:pa`), it is a password's start holding a `/`.
 */
function isHostPort(text: string, from: number, end: number): boolean {
  let colon = -1;
  let cut = end;
  for (let i = from; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x3f || c === 0x23) {
      cut = i;
      break;
    }
    if (c === 0x3a) colon = i;
  }
  if (colon < 0 || text.charCodeAt(cut - 1) === 0x5d) return true;
  for (let i = colon + 1; i < cut; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/**
 * `scheme://user:password@host` → `scheme://<mask>@host` (`mask` may depend on the userinfo), in one
 * pass: a regex retried every start of a long run of scheme characters (40,000 of them held the API's
 * thread for 1.7 s).
 *
 * Where the userinfo ends: free text does not say where a URL ends, and a typed password may hold
 * `@`, `/`, `:`, `?` or `#` unencoded (`redis://:p@ss@host`, `postgres://u:pa@ss/w@db/x`). A URL has
 * credentials when an `@` stands before its first `/` (or, with no `@` there, when what stands
 * there cannot be `host[:port]`, as in `postgres://u:pa/ss@db`: a password holding a `/`); its
 * userinfo then runs to the LAST `@` of the URL's token, which ends at whitespace, a quote or an
 * angle bracket (a URL holds them only percent-encoded; a JSON or quoted neighbour's e-mail address
 * is not swallowed). Masking past a host's `@` in a path (`https://u:p@registry/@scope/pkg`) hides
 * a little too much, which is safe; ending at the first `@` let a password's tail through. A URL
 * with no credentials keeps any `@` of its path (`https://registry/@scope/pkg`).
 *
 * Linear: from each `://` this looks back over its scheme and forward to the next `/` (segments no
 * two `://` share), and a token's last `@` is found once per token, however many `://` it holds.
 */
export function maskUrlCredentials(text: string, mask: string | ((userinfo: string) => string)): string {
  let out = '';
  let copied = 0;
  // The token last read (it ends at tokenEnd) and its last `@` (-1 for none).
  let tokenEnd = -1;
  let tokenAt = -1;
  const lastAt = (from: number): number => {
    if (from >= tokenEnd) {
      TOKEN.lastIndex = from;
      TOKEN.test(text);
      tokenEnd = TOKEN.lastIndex;
      tokenAt = text.slice(from, tokenEnd).lastIndexOf('@');
      if (tokenAt >= 0) tokenAt += from;
    }
    return tokenAt >= from ? tokenAt : -1;
  };
  let sep = text.indexOf('://');
  while (sep >= 0) {
    // The scheme starts at the first letter of the scheme characters before `://`.
    let start = sep;
    while (start > copied && isSchemeChar(text.charCodeAt(start - 1))) start--;
    while (start < sep && !isLetter(text.charCodeAt(start))) start++;
    const from = sep + 3;
    let at = -1;
    if (start < sep) {
      USERINFO.lastIndex = from;
      USERINFO.test(text);
      const first = USERINFO.lastIndex;
      const c = text.charCodeAt(first);
      if (c === 0x40 || (c === 0x2f && !isHostPort(text, from, first))) at = lastAt(first);
    }
    if (at > from) {
      const hidden = typeof mask === 'string' ? mask : mask(text.slice(from, at));
      out += `${text.slice(copied, from)}${hidden}@`;
      copied = at + 1;
      sep = text.indexOf('://', copied);
    } else {
      sep = text.indexOf('://', from);
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}
