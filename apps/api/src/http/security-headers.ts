import type { NextFunction, Request, Response } from 'express';

/**
 * On every answer, errors and the API description included: browsers must not guess a content type
 * (a JSON body read as HTML or script) nor show an answer inside another site's frame (clickjacking of
 * Swagger UI's forms). `frame-ancestors` is the standard form of the latter; X-Frame-Options covers older
 * browsers. Neither restricts what a page may load, so Swagger UI works as before.
 */
export function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
  next();
}
