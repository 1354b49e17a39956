import { INestApplication, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import { ACCESS_RULE } from './access-rule';

export interface RouteDeclaration {
  controller: string;
  handler: string;
  method: string;
  path: string;
  rule: unknown;
}

/** Every HTTP route of the application with the access rule it declares (undefined when none). */
export function routeDeclarations(app: INestApplication): RouteDeclaration[] {
  const out: RouteDeclaration[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const type = wrapper.metatype as (new (...args: never[]) => object) | null;
      if (!type) continue;
      const base = String(Reflect.getMetadata(PATH_METADATA, type) ?? '');
      for (const name of Object.getOwnPropertyNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        out.push({
          controller: type.name,
          handler: name,
          method: RequestMethod[method],
          path: `/${`${base}/${String(Reflect.getMetadata(PATH_METADATA, handler) ?? '')}`
            .split('/')
            .filter(Boolean)
            .join('/')}`,
          rule: Reflect.getMetadata(ACCESS_RULE, handler) ?? Reflect.getMetadata(ACCESS_RULE, type),
        });
      }
    }
  }
  return out;
}

/** Refuses to boot with a route that declares no capability: outcome `unmapped` must never happen. */
export function assertEveryRouteDeclared(app: INestApplication): void {
  const missing = routeDeclarations(app).filter((r) => r.rule === undefined);
  if (missing.length > 0) {
    throw new Error(
      `routes without a declared capability (@Requires, @Public or @SignedIn): ${missing
        .map((r) => `${r.method} ${r.path} (${r.controller}.${r.handler})`)
        .join(', ')}`,
    );
  }
}
