/** Byte values, character classes and error wording of the JSON grammar (RFC 8259). */

export const TAB = 9;
export const LF = 10;
export const CR = 13;
export const SPACE = 32;
export const QUOTE = 34;
export const PLUS = 43;
export const COMMA = 44;
export const MINUS = 45;
export const DOT = 46;
export const ZERO = 48;
export const NINE = 57;
export const COLON = 58;
export const LBRACKET = 91;
export const BSLASH = 92;
export const RBRACKET = 93;
export const LBRACE = 123;
export const RBRACE = 125;

/** Bytes that may stand in a string as they are: not `"`, not `\`, not a control character. */
export const STRING_PLAIN = new Uint8Array(256);
for (let c = 0x20; c < 256; c++) STRING_PLAIN[c] = 1;
STRING_PLAIN[QUOTE] = 0;
STRING_PLAIN[BSLASH] = 0;

/** Bytes that may follow a backslash (`u` starts four hex digits). */
export const ESCAPES = new Uint8Array(256);
for (const ch of '"\\/bfnrtu') ESCAPES[ch.charCodeAt(0)] = 1;

export const HEX = new Uint8Array(256);
for (const ch of '0123456789abcdefABCDEF') HEX[ch.charCodeAt(0)] = 1;

export function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/** JSON's insignificant whitespace, line feed excluded (callers count lines). */
export function isBlank(c: number): boolean {
  return c === SPACE || c === TAB || c === CR;
}

/** How an offending byte is named in an error message. */
export function describeByte(c: number | undefined): string {
  if (c === undefined) return 'the end of the input';
  if (c === LF) return 'a line break';
  if (c > 0x20 && c < 0x7f) return `'${String.fromCharCode(c)}'`;
  if (c === SPACE) return 'a space';
  return `byte 0x${c.toString(16).padStart(2, '0')}`;
}
