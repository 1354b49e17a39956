import type { Request } from 'express';
import { Credentials, SESSION_COOKIE } from '@tapyard/auth';

/** `Cookie` header → map (first occurrence wins, as browsers send the most specific cookie first). */
export function cookies(req: Request): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (out.has(name)) continue;
    try {
      out.set(name, decodeURIComponent(part.slice(eq + 1).trim()));
    } catch {
      // a malformed cookie is ignored, never fatal
    }
  }
  return out;
}

export function credentialsOf(req: Request): Credentials {
  const key = req.header('x-api-key')?.trim();
  return { apiKey: key ? key : null, sessionId: cookies(req).get(SESSION_COOKIE) ?? null };
}
