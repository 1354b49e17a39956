import type { NextFunction, Request, Response } from 'express';
import { ValidationError } from '@tapyard/core';

/** Deepest nesting of a JSON request body; no Tapyard body comes near it. */
export const MAX_BODY_DEPTH = 64;

/**
 * Refuses a NUL character in the path or a query value (400): PostgreSQL text cannot hold one, so
 * it would otherwise surface as a 500 from whatever query the value reaches.
 */
export function rejectNulCharacters(req: Request, _res: Response, next: NextFunction): void {
  const path = req.originalUrl.split('?')[0];
  if (/%00/.test(path)) return next(new ValidationError('the request path holds a NUL character'));
  const key = nulKey(req.query, '');
  next(key === null ? undefined : new ValidationError(`query parameter '${key}' holds a NUL character`));
}

function nulKey(value: unknown, name: string): string | null {
  if (typeof value === 'string') return value.includes('\0') || name.includes('\0') ? name : null;
  if (typeof value !== 'object' || value === null) return null;
  for (const [k, v] of Object.entries(value)) {
    if (k.includes('\0')) return k.replaceAll('\0', '\\u0000');
    const found = nulKey(v, name === '' ? k : name);
    if (found !== null) return found;
  }
  return null;
}

/**
 * body-parser `verify` hook: refuses a JSON body nested deeper than MAX_BODY_DEPTH before it is
 * parsed, since validation and transformation walk it recursively, and a string holding a NUL
 * character (`\u0000`), which no PostgreSQL text or JSON column can store: like a NUL in the path, it
 * would otherwise surface as a 500 from whatever query the value reaches. One pass over the bytes.
 */
export function checkJsonBody(_req: Request, _res: Response, buf: Buffer): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c) {
        if (buf[i + 1] === 0x75 && buf.toString('latin1', i + 2, i + 6) === '0000') {
          throw Object.assign(new Error(`${nulWhere(buf)} holds a NUL character (\\u0000)`), {
            status: 400,
            type: 'entity.nul',
            expose: true,
          });
        }
        i++;
      } else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_BODY_DEPTH) {
        throw Object.assign(new Error(`request body is nested deeper than ${MAX_BODY_DEPTH} levels`), {
          status: 400,
          type: 'entity.too.deep',
          expose: true,
        });
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
}

/** Where a body's NUL is, for the message: `request body field 'state.cursor'` (or the body's own). */
function nulWhere(buf: Buffer): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(buf.toString('utf8'));
  } catch {
    return 'request body';
  }
  const walk = (v: unknown, path: string): string | null => {
    if (typeof v === 'string') return v.includes('\0') ? path : null;
    if (typeof v !== 'object' || v === null) return null;
    for (const [k, child] of Object.entries(v)) {
      const at = Array.isArray(v) ? `${path}[${k}]` : path === '' ? k : `${path}.${k}`;
      if (k.includes('\0')) return at.replaceAll('\0', '\\u0000');
      const found = walk(child, at);
      if (found !== null) return found;
    }
    return null;
  };
  const path = walk(parsed, '');
  return path === null || path === '' ? 'request body' : `request body field '${path.slice(0, 200)}'`;
}
