/**
 * A streaming recogniser of the JSON grammar (RFC 8259): a pushdown automaton over bytes whose
 * state survives chunk boundaries, so every byte of the input is checked exactly once, whatever
 * the chunk sizes. It builds no values; subclasses get hooks at value boundaries and cut records
 * out of the input there. Every state either consumes the byte it looks at or moves to a state
 * that will, so a scan always ends (the reader's fuzz tests hold it to that).
 *
 * Container nesting is a byte stack (1 per level), so deep input costs memory linear in its depth
 * up to MAX_NESTING, never recursion.
 */
import {
  BSLASH,
  COLON,
  COMMA,
  DOT,
  ESCAPES,
  HEX,
  LBRACE,
  LBRACKET,
  LF,
  MINUS,
  PLUS,
  QUOTE,
  RBRACE,
  RBRACKET,
  STRING_PLAIN,
  ZERO,
  describeByte,
  isBlank,
  isDigit,
} from './json-syntax';

/** Deepest nesting the recogniser tracks; deeper input is refused (1 byte of stack per level). */
export const MAX_NESTING = 1_000_000;

// States. Structural states first; the ones from S_STRING on read inside a token.
export const S_TOP = 0; // before the (next) top-level value
export const S_TOP_AFTER = 1; // after a top-level value
const S_VALUE = 2; // a value is required
const S_ARRAY_FIRST = 3; // after '[': a value or ']'
const S_OBJECT_FIRST = 4; // after '{': a key or '}'
const S_KEY = 5; // after ',' in an object
const S_COLON = 6;
const S_AFTER = 7; // after a value inside a container
export const S_SKIP_LINE = 8; // JSON Lines: skipping the rest of a rejected line
const S_STRING = 9;
const S_ESCAPE = 10;
const S_HEX = 11;
const S_MINUS = 12;
const S_ZERO = 13;
const S_INT = 14;
const S_DOT = 15;
const S_FRAC = 16;
const S_EXP_MARK = 17;
const S_EXP_SIGN = 18;
const S_EXP = 19;
const S_LITERAL = 20;

const OBJECT = 1;
const ARRAY = 2;
const LITERALS: Record<number, Buffer> = {
  0x74: Buffer.from('true'),
  0x66: Buffer.from('false'),
  0x6e: Buffer.from('null'),
};

export abstract class JsonGrammar {
  /** Open containers. */
  protected depth = 0;
  protected st = S_TOP;
  /** 1-based line of the byte being read. */
  protected line = 1;
  /** JSON Lines: a line break outside a string ends the line's value; errors reject the line. */
  protected lines = false;
  /** Digits of the number being read (for spotting numbers JSON.parse would round). */
  protected digits = 0;
  private stack = new Uint8Array(64);
  private inKey = false;
  private hexLeft = 0;
  private literal: Buffer = LITERALS[0x74];
  private literalAt = 0;

  /** A value starts at `i` (its first byte `c`); `depth` is its parent's depth. */
  protected abstract valueStart(i: number, c: number): void;
  /** The value ended just before `end`; `depth` is back at its parent's. */
  protected abstract valueEnd(end: number): void;
  /** An object key's string starts at `i` (the opening quote) / ends at `i` (the closing quote). */
  protected abstract keyStart(i: number): void;
  protected abstract keyEnd(i: number): void;
  /** JSON Lines: the line ending at `i` (its line feed, or the end of input) is complete. */
  protected abstract lineEnd(i: number): void;
  /**
   * The input is not JSON at `i` (-1: at the end of input). Throws, or (JSON Lines) rejects the
   * line, after which the recogniser skips to the next line.
   */
  protected abstract syntaxError(i: number, problem: string): void;

  protected get inString(): boolean {
    return this.st === S_STRING || this.st === S_ESCAPE || this.st === S_HEX;
  }

  protected get readingKey(): boolean {
    return this.inKey && this.inString;
  }

  /** Scans bytes [i, n) of `s`. */
  protected scan(s: Buffer, i: number, n: number): void {
    while (i < n) {
      const st = this.st;
      if (st === S_STRING) {
        while (i < n && STRING_PLAIN[s[i]] === 1) i++;
        if (i === n) return;
        const c = s[i];
        if (c === QUOTE) this.stringEnd(i++);
        else if (c === BSLASH) {
          this.st = S_ESCAPE;
          i++;
        } else this.fail(i, `${describeByte(c)} inside a string (control characters must be escaped)`);
        continue;
      }
      const c = s[i];
      if (st >= S_ESCAPE) {
        if (this.token(st, c, i)) i++;
        continue;
      }
      if (st === S_SKIP_LINE) {
        const nl = s.indexOf(LF, i);
        if (nl < 0) return;
        i = nl + 1;
        this.depth = 0;
        this.st = S_TOP;
        this.line++;
        continue;
      }
      if (isBlank(c)) {
        i++;
        continue;
      }
      if (c === LF) {
        if (this.lines) {
          if (this.depth > 0 || st !== S_TOP_AFTER) {
            if (st !== S_TOP) {
              this.fail(
                i,
                'a line break before the value is complete (a JSON Lines record must fit on one line)',
              );
              continue;
            }
          } else this.lineEnd(i);
          this.st = S_TOP;
        }
        this.line++;
        i++;
        continue;
      }
      if (this.structural(st, c, i)) i++;
    }
  }

  /** At the end of input: completes a number, then requires every value to be closed. */
  protected endOfInput(): void {
    const st = this.st;
    if (st === S_ZERO || st === S_INT || st === S_FRAC || st === S_EXP) this.valueDone(0);
    if (this.st === S_SKIP_LINE) return;
    if (this.depth === 0 && (this.st === S_TOP || this.st === S_TOP_AFTER)) {
      if (this.lines && this.st === S_TOP_AFTER) this.lineEnd(-1);
      return;
    }
    this.fail(-1, `the input ends before the JSON is complete (expected ${this.expected()})`);
  }

  /** One byte in a structural state; returns whether it was consumed. */
  private structural(st: number, c: number, i: number): boolean {
    switch (st) {
      case S_TOP:
      case S_VALUE:
        return this.value(c, i);
      case S_ARRAY_FIRST:
        if (c === RBRACKET) return this.close(ARRAY, i);
        return this.value(c, i);
      case S_OBJECT_FIRST:
        if (c === RBRACE) return this.close(OBJECT, i);
        return this.keyByte(c, i);
      case S_KEY:
        return this.keyByte(c, i);
      case S_COLON:
        if (c !== COLON) return this.unexpected(c, i);
        this.st = S_VALUE;
        return true;
      case S_AFTER: {
        const top = this.stack[this.depth - 1];
        if (c === COMMA) {
          this.st = top === ARRAY ? S_VALUE : S_KEY;
          return true;
        }
        if (c === RBRACKET && top === ARRAY) return this.close(ARRAY, i);
        if (c === RBRACE && top === OBJECT) return this.close(OBJECT, i);
        return this.unexpected(c, i);
      }
      default: // S_TOP_AFTER: a second top-level value
        this.fail(i, `${describeByte(c)} after the end of the JSON value`);
        return false;
    }
  }

  private value(c: number, i: number): boolean {
    switch (c) {
      case LBRACE:
      case LBRACKET:
        this.valueStart(i, c);
        if (this.st === S_SKIP_LINE) return false;
        if (this.depth === MAX_NESTING) {
          this.fail(i, `nesting deeper than ${MAX_NESTING} levels`);
          return false;
        }
        if (this.depth === this.stack.length) {
          const grown = new Uint8Array(Math.min(MAX_NESTING, this.stack.length * 2));
          grown.set(this.stack);
          this.stack = grown;
        }
        this.stack[this.depth++] = c === LBRACE ? OBJECT : ARRAY;
        this.st = c === LBRACE ? S_OBJECT_FIRST : S_ARRAY_FIRST;
        return true;
      case QUOTE:
        this.valueStart(i, c);
        this.inKey = false;
        this.st = S_STRING;
        return true;
      case MINUS:
        this.valueStart(i, c);
        this.digits = 0;
        this.st = S_MINUS;
        return true;
      default:
        if (isDigit(c)) {
          this.valueStart(i, c);
          this.digits = 1;
          this.st = c === ZERO ? S_ZERO : S_INT;
          return true;
        }
        if (LITERALS[c] !== undefined) {
          this.valueStart(i, c);
          this.literal = LITERALS[c];
          this.literalAt = 1;
          this.st = S_LITERAL;
          return true;
        }
        return this.unexpected(c, i);
    }
  }

  private keyByte(c: number, i: number): boolean {
    if (c !== QUOTE) return this.unexpected(c, i);
    this.inKey = true;
    this.keyStart(i);
    this.st = S_STRING;
    return true;
  }

  private close(kind: number, i: number): boolean {
    if (this.stack[this.depth - 1] !== kind) return this.unexpected(kind === ARRAY ? RBRACKET : RBRACE, i);
    this.depth--;
    this.valueDone(i + 1);
    return true;
  }

  private stringEnd(i: number): void {
    if (this.inKey) {
      this.inKey = false;
      this.keyEnd(i);
      this.st = S_COLON;
    } else this.valueDone(i + 1);
  }

  private valueDone(end: number): void {
    this.st = this.depth === 0 ? S_TOP_AFTER : S_AFTER;
    this.valueEnd(end);
    this.digits = 0;
  }

  /** One byte inside an escape, a number or a literal; returns whether it was consumed. */
  private token(st: number, c: number, i: number): boolean {
    switch (st) {
      case S_ESCAPE:
        if (ESCAPES[c] !== 1) return this.bad(i, `${describeByte(c)} after a backslash (not a JSON escape)`);
        if (c === 0x75) {
          this.hexLeft = 4;
          this.st = S_HEX;
        } else this.st = S_STRING;
        return true;
      case S_HEX:
        if (HEX[c] !== 1) return this.bad(i, `${describeByte(c)} in a \\u escape (four hex digits expected)`);
        if (--this.hexLeft === 0) this.st = S_STRING;
        return true;
      case S_MINUS:
        if (!isDigit(c)) return this.bad(i, `${describeByte(c)} after '-' (a digit expected)`);
        this.digits = 1;
        this.st = c === ZERO ? S_ZERO : S_INT;
        return true;
      case S_ZERO:
        if (isDigit(c)) return this.bad(i, 'a number with a leading zero');
        return this.fraction(c, i);
      case S_INT:
        if (isDigit(c)) {
          this.digits++;
          return true;
        }
        return this.fraction(c, i);
      case S_DOT:
      case S_EXP_MARK:
      case S_EXP_SIGN:
        if (isDigit(c)) {
          if (st === S_DOT) this.digits++;
          this.st = st === S_DOT ? S_FRAC : S_EXP;
          return true;
        }
        if (st === S_EXP_MARK && (c === PLUS || c === MINUS)) {
          this.st = S_EXP_SIGN;
          return true;
        }
        return this.bad(i, `${describeByte(c)} in a number (a digit expected)`);
      case S_FRAC:
        if (isDigit(c)) {
          this.digits++;
          return true;
        }
        if (c === 0x65 || c === 0x45) {
          this.st = S_EXP_MARK;
          return true;
        }
        this.valueDone(i);
        return false;
      case S_EXP:
        if (isDigit(c)) return true;
        this.valueDone(i);
        return false;
      default: // S_LITERAL
        if (c !== this.literal[this.literalAt]) {
          return this.bad(i, `${describeByte(c)} in '${this.literal.toString()}'`);
        }
        if (++this.literalAt === this.literal.length) this.valueDone(i + 1);
        return true;
    }
  }

  /** After the integer part: a fraction, an exponent, or the end of the number (not consumed). */
  private fraction(c: number, i: number): boolean {
    if (c === DOT) {
      this.st = S_DOT;
      return true;
    }
    if (c === 0x65 || c === 0x45) {
      this.st = S_EXP_MARK;
      return true;
    }
    this.valueDone(i);
    return false;
  }

  private unexpected(c: number, i: number): boolean {
    return this.bad(i, `expected ${this.expected()}, found ${describeByte(c)}`);
  }

  private bad(i: number, problem: string): boolean {
    this.fail(i, problem);
    return false;
  }

  private fail(i: number, problem: string): void {
    this.syntaxError(i, problem);
    // Only JSON Lines gets here (elsewhere syntaxError throws): skip to the next line.
    this.st = S_SKIP_LINE;
    this.depth = 0;
  }

  private expected(): string {
    switch (this.st) {
      case S_TOP:
      case S_VALUE:
        return 'a value';
      case S_ARRAY_FIRST:
        return "a value or ']'";
      case S_OBJECT_FIRST:
        return "a key or '}'";
      case S_KEY:
        return 'a key (a string)';
      case S_COLON:
        return "':'";
      case S_AFTER:
        return this.stack[this.depth - 1] === ARRAY ? "',' or ']'" : "',' or '}'";
      case S_STRING:
      case S_ESCAPE:
      case S_HEX:
        return "'\"' closing the string";
      case S_LITERAL:
        return `'${this.literal.toString()}'`;
      default:
        return 'a digit';
    }
  }
}
