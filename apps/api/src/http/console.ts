import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import express, { NextFunction, Request, RequestHandler, Response } from 'express';

/** What the API answers itself (the API, metrics and probes): never the console's. */
const API_PATHS = /^\/(?:api(?:\/|$)|metrics$|livez$|readyz$)/;

/**
 * The console loads nothing but its own files and talks to nothing but this origin: no inline script or
 * style, no fonts, CDNs or analytics, no framing.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Where the built console is: CONSOLE_DIR, else the one the build put beside the API (`dist/console`);
 * null when it is off or not built (a checkout run from source), and the API then serves only the API.
 */
export function consoleDirectory(configured: string | null): string | null {
  if (configured === 'off') return null;
  const dir = configured ?? join(__dirname, '..', '..', '..', '..', 'console');
  return existsSync(join(dir, 'index.html')) ? dir : null;
}

/**
 * The console's files at `/`, and its page for a browser navigating to one of its routes (`/pipelines`)
 * so a reload or a shared link works. Only a request that asks for HTML gets the page: a program calling
 * a wrong path still gets the API's JSON 404. Vite names assets by content hash, so they are cached for
 * good; the page itself is revalidated on every load so a new build is picked up at once.
 */
export function serveConsole(dir: string): RequestHandler {
  const page = readFileSync(join(dir, 'index.html'));
  const files = express.static(dir, {
    index: false,
    redirect: false,
    setHeaders: (res, path) => {
      res.setHeader('Content-Security-Policy', CONSOLE_CSP);
      res.setHeader(
        'Cache-Control',
        path.startsWith(join(dir, 'assets')) ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
    },
  });
  const sendPage = (res: Response): void => {
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(page);
  };
  return (req: Request, res: Response, next: NextFunction): void => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || API_PATHS.test(req.path)) return next();
    if (req.path === '/' || req.path === '/index.html') return sendPage(res);
    files(req, res, (err?: unknown) => {
      if (err) return next(err);
      if ((req.headers.accept ?? '').includes('text/html') && !req.path.startsWith('/assets/'))
        return sendPage(res);
      next();
    });
  };
}
