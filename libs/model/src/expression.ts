import { ValidationError } from './errors';
import { PipelineErrorCode } from './pipeline-errors';

/**
 * The small expression language of `derive` steps: column names, 'string' literals, numbers,
 * `||` (concatenation, null-safe), + - * / on numbers, parentheses, and the functions upper, lower,
 * trim, length, coalesce and concat. Values are strings or null, as in the row; arithmetic on
 * something that is not a number yields null.
 */
export type Expr =
  | { kind: 'column'; name: string }
  | { kind: 'literal'; value: string | null }
  | { kind: 'binary'; op: '||' | '+' | '-' | '*' | '/'; left: Expr; right: Expr }
  | { kind: 'call'; fn: FunctionName; args: Expr[] };

const FUNCTIONS = ['upper', 'lower', 'trim', 'length', 'coalesce', 'concat'] as const;
type FunctionName = (typeof FUNCTIONS)[number];

type Token = { t: 'id' | 'str' | 'num' | 'op' | '(' | ')' | ','; v: string };

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) i++;
    else if (c === "'") {
      let j = i + 1;
      let s = '';
      for (;;) {
        if (j >= src.length) throw new Error('unterminated string literal');
        if (src[j] === "'" && src[j + 1] === "'") {
          s += "'";
          j += 2;
        } else if (src[j] === "'") break;
        else s += src[j++];
      }
      out.push({ t: 'str', v: s });
      i = j + 1;
    } else if (/[0-9.]/.test(c)) {
      const m = /^(\d+\.?\d*|\.\d+)/.exec(src.slice(i));
      if (!m) throw new Error(`unexpected '${c}'`);
      out.push({ t: 'num', v: m[0] });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i)) as RegExpExecArray;
      out.push({ t: 'id', v: m[0] });
      i += m[0].length;
    } else if (src.startsWith('||', i)) {
      out.push({ t: 'op', v: '||' });
      i += 2;
    } else if ('+-*/'.includes(c)) {
      out.push({ t: 'op', v: c });
      i++;
    } else if (c === '(' || c === ')' || c === ',') {
      out.push({ t: c, v: c });
      i++;
    } else throw new Error(`unexpected '${c}'`);
  }
  return out;
}

const PRECEDENCE: Record<string, number> = { '||': 1, '+': 2, '-': 2, '*': 3, '/': 3 };

export function parseExpression(src: string): Expr {
  let tokens: Token[];
  try {
    tokens = tokenize(src);
  } catch (err) {
    throw new ValidationError(`derive expression '${src}' is invalid: ${(err as Error).message}`).coded(
      PipelineErrorCode.InvalidExpression,
    );
  }
  let pos = 0;
  const fail = (why: string): never => {
    throw new ValidationError(`derive expression '${src}' is invalid: ${why}`).coded(
      PipelineErrorCode.InvalidExpression,
    );
  };
  const primary = (): Expr => {
    const tok = tokens[pos++];
    if (!tok) return fail('unexpected end');
    if (tok.t === 'str') return { kind: 'literal', value: tok.v };
    if (tok.t === 'num') return { kind: 'literal', value: tok.v };
    if (tok.t === 'op' && tok.v === '-') {
      const inner = primary();
      return { kind: 'binary', op: '-', left: { kind: 'literal', value: '0' }, right: inner };
    }
    if (tok.t === '(') {
      const e = binary(0);
      if (tokens[pos++]?.t !== ')') fail("missing ')'");
      return e;
    }
    if (tok.t === 'id') {
      if (tokens[pos]?.t !== '(') {
        return tok.v.toLowerCase() === 'null'
          ? { kind: 'literal', value: null }
          : { kind: 'column', name: tok.v };
      }
      const fn = tok.v.toLowerCase() as FunctionName;
      if (!FUNCTIONS.includes(fn)) fail(`unknown function ${tok.v} (known: ${FUNCTIONS.join(', ')})`);
      pos++;
      const args: Expr[] = [];
      if (tokens[pos]?.t === ')') pos++;
      else {
        for (;;) {
          args.push(binary(0));
          const sep = tokens[pos++];
          if (sep?.t === ')') break;
          if (sep?.t !== ',') fail(`expected ',' or ')' in ${fn}()`);
        }
      }
      return { kind: 'call', fn, args };
    }
    return fail(`unexpected '${tok.v}'`);
  };
  const binary = (minPrec: number): Expr => {
    let left = primary();
    for (;;) {
      const tok = tokens[pos];
      if (!tok || tok.t !== 'op' || PRECEDENCE[tok.v] < minPrec) break;
      pos++;
      const right = binary(PRECEDENCE[tok.v] + 1);
      left = { kind: 'binary', op: tok.v as '||', left, right };
    }
    return left;
  };
  const expr = binary(0);
  if (pos < tokens.length) fail(`unexpected '${tokens[pos].v}'`);
  return expr;
}

export function columnsOf(e: Expr, into = new Set<string>()): Set<string> {
  if (e.kind === 'column') into.add(e.name);
  else if (e.kind === 'binary') {
    columnsOf(e.left, into);
    columnsOf(e.right, into);
  } else if (e.kind === 'call') e.args.forEach((a) => columnsOf(a, into));
  return into;
}

export function evaluate(e: Expr, row: (column: string) => string | null): string | null {
  switch (e.kind) {
    case 'literal':
      return e.value;
    case 'column':
      return row(e.name);
    case 'binary': {
      const l = evaluate(e.left, row);
      const r = evaluate(e.right, row);
      if (e.op === '||') return l === null && r === null ? null : (l ?? '') + (r ?? '');
      const a = l === null ? NaN : Number(l);
      const b = r === null ? NaN : Number(r);
      if (
        l === null ||
        r === null ||
        l.trim() === '' ||
        r.trim() === '' ||
        Number.isNaN(a) ||
        Number.isNaN(b)
      ) {
        return null;
      }
      const v = e.op === '+' ? a + b : e.op === '-' ? a - b : e.op === '*' ? a * b : b === 0 ? NaN : a / b;
      return Number.isFinite(v) ? String(v) : null;
    }
    case 'call': {
      const args = e.args.map((a) => evaluate(a, row));
      switch (e.fn) {
        case 'upper':
          return args[0]?.toUpperCase() ?? null;
        case 'lower':
          return args[0]?.toLowerCase() ?? null;
        case 'trim':
          return args[0]?.trim() ?? null;
        case 'length':
          return args[0] === null || args[0] === undefined ? null : String([...args[0]].length);
        case 'coalesce':
          return args.find((a) => a !== null && a !== '') ?? null;
        case 'concat':
          return args.map((a) => a ?? '').join('');
      }
    }
  }
}
