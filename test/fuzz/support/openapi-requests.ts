/**
 * Requests built from an OpenAPI document, then broken on purpose (issue 27 item 6): a plausible
 * body, query and path for every operation, read from its schemas, and mutations of one place in
 * them (a property missing, null, of another type, huge, deeply nested, an unknown enum value, a
 * prototype-pollution key). The route fuzz sends them to the running API.
 */
import fc from 'fast-check';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface Schema {
  $ref?: string;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  type?: string;
  enum?: Json[];
  example?: Json;
  default?: Json;
  format?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  required?: string[];
  items?: Schema;
  minimum?: number;
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Schema;
}

interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

/** One operation with what it reads: a JSON body schema, query and path parameters. */
export interface RouteShape {
  method: string;
  path: string;
  body: Schema | null;
  query: Parameter[];
  params: Parameter[];
}

/** A request ready to send, and what was broken in it (printed when the route fails). */
export interface FuzzRequest {
  method: string;
  url: string;
  /** The JSON text of the body, or null for none. */
  body: string | null;
  mutation: string;
}

/** Operations taking a JSON body, query or path parameters; multipart uploads have their own suites. */
export function fuzzableRoutes(doc: OpenApiDocument): RouteShape[] {
  const routes: RouteShape[] = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const parameters = op.parameters ?? [];
      const content = op.requestBody?.content;
      const body = content?.['application/json']?.schema ?? null;
      if (content && !body) continue;
      const query = parameters.filter((p) => p.in === 'query');
      const params = parameters.filter((p) => p.in === 'path');
      if (body || query.length > 0 || params.length > 0)
        routes.push({ method: method.toUpperCase(), path, body, query, params });
    }
  }
  return routes;
}

/** Resolves `$ref` and `allOf` (Nest's swagger plug-in wraps a described nested DTO in one). */
function resolve(doc: OpenApiDocument, schema: Schema): Schema {
  let s = schema;
  for (let hops = 0; hops < 20; hops++) {
    if (s.$ref) s = doc.components?.schemas?.[s.$ref.replace('#/components/schemas/', '')] ?? {};
    else if (s.allOf?.length) s = { ...s.allOf[0], ...s, allOf: undefined };
    else if (s.oneOf?.length) s = { ...s.oneOf[0], ...s, oneOf: undefined };
    else if (s.anyOf?.length) s = { ...s.anyOf[0], ...s, anyOf: undefined };
    else return s;
  }
  return s;
}

/**
 * A value the schema describes: its example, first enum value or default, else a plain one. With
 * `required`, objects hold only their required properties: the smallest body that passes validation,
 * so that a property taken out of it reaches the service (a full body fails on some other property first).
 */
export function sampleOf(doc: OpenApiDocument, schema: Schema, required = false, depth = 0): Json {
  const s = resolve(doc, schema);
  if (s.example !== undefined && s.type !== 'object') return s.example;
  if (s.enum?.length) return s.enum[0];
  if (s.default !== undefined && s.type !== 'object') return s.default;
  switch (s.type) {
    case 'string':
      return s.format === 'date-time' ? '2026-01-02T03:04:05Z' : 'fuzz';
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return depth > 6 || !s.items ? [] : [sampleOf(doc, s.items, required, depth + 1)];
    default: {
      if (s.example !== undefined) return s.example;
      // No type and no shape: a described scalar (Nest leaves `string | null` untyped).
      if (s.type !== 'object' && !s.properties && !s.additionalProperties) return 'fuzz';
      const out: { [key: string]: Json } = {};
      if (depth > 6) return out;
      for (const [key, prop] of Object.entries(s.properties ?? {})) {
        if (required && !s.required?.includes(key)) continue;
        out[key] = sampleOf(doc, prop, required, depth + 1);
      }
      if (typeof s.additionalProperties === 'object')
        out.key = sampleOf(doc, s.additionalProperties, required, depth + 1);
      return out;
    }
  }
}

/** Every place in a value: the root, each property and each array item, as key paths. */
function placesOf(value: Json, at: (string | number)[] = []): (string | number)[][] {
  const here = [at];
  if (Array.isArray(value)) return here.concat(...value.map((v, i) => placesOf(v, [...at, i])));
  if (value !== null && typeof value === 'object')
    return here.concat(...Object.entries(value).map(([k, v]) => placesOf(v, [...at, k])));
  return here;
}

function nested(depth: number, leaf: Json): Json {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { a: v };
  return v;
}

/** An object whose own `__proto__` / `constructor` key survives JSON.stringify and reaches the server. */
function pollution(key: string): Json {
  const o: Record<string, Json> = {};
  const payload: Json =
    key === 'constructor' ? { prototype: { fuzzPolluted: true } } : { fuzzPolluted: true };
  Object.defineProperty(o, key, { value: payload, enumerable: true, configurable: true, writable: true });
  return o;
}

const HUGE = 'x'.repeat(200_000);

/** Replacements of one value: what a careless or hostile client puts there. */
const replacement: fc.Arbitrary<[string, Json | undefined]> = fc.oneof(
  fc.constant<[string, Json | undefined]>(['missing', undefined]),
  fc.constant<[string, Json | undefined]>(['null', null]),
  fc.constantFrom<[string, Json | undefined]>(
    ['a number', 12345],
    ['a negative number', -1],
    ['a huge number', 1e308],
    ['a fraction', 0.5],
    ['a boolean', false],
    ['a string', 'not-what-you-want'],
    ['an empty string', ''],
    ['an array', ['x', 1]],
    ['an empty object', {}],
    ['a huge string', HUGE],
    ['control characters', 'a\u0000b\u0007\u001b[31m\ud800'],
    ['a near-miss enum', 'Objectstore'],
    ['deep nesting (60)', nested(60, 'x')],
    ['deep nesting (70)', nested(70, 'x')],
    ['a __proto__ key', pollution('__proto__')],
    ['a constructor key', pollution('constructor')],
  ),
  fc.jsonValue({ maxDepth: 3 }).map((v): [string, Json | undefined] => ['random JSON', v as Json]),
);

function setAt(root: Json, place: (string | number)[], value: Json | undefined): Json | undefined {
  if (place.length === 0) return value;
  const copy = JSON.parse(JSON.stringify(root)) as Json;
  let node = copy as Record<string | number, Json>;
  for (const key of place.slice(0, -1)) node = node[key] as Record<string | number, Json>;
  const last = place[place.length - 1];
  if (value === undefined) {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else node[last] = value;
  return copy;
}

/** A pollution key added beside the other properties of an object (JSON.stringify keeps it). */
function withExtraKey(root: Json, place: (string | number)[], key: string): Json {
  const copy = JSON.parse(JSON.stringify(root)) as Json;
  let node = copy as Record<string | number, Json>;
  for (const k of place) node = node[k] as Record<string | number, Json>;
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return copy;
  const extra = pollution(key) as Record<string, Json>;
  Object.defineProperty(node, key, {
    value: extra[key],
    enumerable: true,
    configurable: true,
    writable: true,
  });
  return copy;
}

function queryString(values: [string, string][]): string {
  return values.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
}

/** Query and path values a client may send: `qs` turns `a[b]=c` into an object and `a=1&a=2` into an array. */
const queryValue = fc.constantFrom<[string, string[] | null]>(
  ['missing', null],
  ['empty', ['']],
  // Under Node's 16 KiB header limit, so it reaches the routes (past it Node answers 431 itself).
  ['huge', ['y'.repeat(8_000)]],
  ['not a number', ['NaN']],
  ['negative', ['-1']],
  ['huge number', ['1e999']],
  ['repeated', ['a', 'b']],
  ['unicode', ['é😀\u202e']],
  ['path characters', ['../../etc/passwd']],
  ['sql', ["' OR 1=1 --"]],
  ['an object', ['[x]=1']],
);

interface Documented {
  body: Json | null;
  query: [string, string][];
  params: Record<string, string>;
  build(b: Json | undefined, q: [string, string][], p: Record<string, string>, mutation: string): FuzzRequest;
}

/** The request the document proposes for `route`, and how to send a changed one. */
function documented(doc: OpenApiDocument, route: RouteShape, required: boolean): Documented {
  return {
    body: route.body ? sampleOf(doc, route.body, required) : null,
    query: route.query
      .filter((p) => p.required)
      .map((p) => [p.name, String(sampleOf(doc, p.schema ?? { type: 'string' }))]),
    params: Object.fromEntries(
      route.params.map((p) => [p.name, String(sampleOf(doc, p.schema ?? { type: 'string' }))]),
    ),
    build(b, q, p, mutation) {
      const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(p[name] ?? 'x'));
      const qs = queryString(q);
      return {
        method: route.method,
        url: qs ? `${path}?${qs}` : path,
        body: b === undefined ? null : JSON.stringify(b),
        mutation,
      };
    },
  };
}

/**
 * Every property of the smallest valid body of `route` missing, null, and of another kind, one at a
 * time: the sweep that finds a required object the DTO forgot to require, whatever the random runs pick.
 */
export function sweptRequests(doc: OpenApiDocument, route: RouteShape): FuzzRequest[] {
  const { body, query, params, build } = documented(doc, route, true);
  if (body === null) return [];
  return placesOf(body).flatMap((place) => {
    const at = place.join('.') || '(root)';
    const current = place.reduce<Json>((v, k) => (v as Record<string | number, Json>)[k], body);
    const other: Json = typeof current === 'string' ? 7 : 'x';
    return [
      build(setAt(body, place, undefined), query, params, `body ${at}: missing`),
      build(setAt(body, place, null), query, params, `body ${at}: null`),
      build(setAt(body, place, other), query, params, `body ${at}: ${JSON.stringify(other)}`),
    ];
  });
}

/** A request of `route` with one place broken at random: a body property, a query or a path parameter. */
export function mutatedRequest(doc: OpenApiDocument, route: RouteShape): fc.Arbitrary<FuzzRequest> {
  const { body, query, params, build } = documented(doc, route, false);

  const choices: fc.Arbitrary<FuzzRequest>[] = [];
  if (body !== null) {
    const places = placesOf(body);
    choices.push(
      fc
        .tuple(fc.constantFrom(...places), replacement)
        .map(([place, [label, value]]) =>
          build(setAt(body, place, value), query, params, `body ${place.join('.') || '(root)'}: ${label}`),
        ),
      fc
        .tuple(fc.constantFrom(...places), fc.constantFrom('__proto__', 'constructor', 'prototype'))
        .map(([place, key]) =>
          build(
            withExtraKey(body, place, key),
            query,
            params,
            `body ${place.join('.') || '(root)'}: + ${key}`,
          ),
        ),
    );
  }
  const names = [...route.query.map((p) => p.name)];
  if (names.length > 0) {
    choices.push(
      fc.tuple(fc.constantFrom(...names), queryValue).map(([name, [label, values]]) => {
        const rest = query.filter(([k]) => k !== name);
        const added: [string, string][] =
          values === null
            ? []
            : label === 'an object'
              ? [[`${name}[x]`, '1']]
              : values.map((v): [string, string] => [name, v]);
        return build(body ?? undefined, [...rest, ...added], params, `query ${name}: ${label}`);
      }),
    );
  }
  if (route.params.length > 0) {
    choices.push(
      fc
        .tuple(fc.constantFrom(...route.params.map((p) => p.name)), queryValue)
        .filter(([, [, values]]) => values !== null && values[0] !== '')
        .map(([name, [label, values]]) =>
          build(
            body ?? undefined,
            query,
            { ...params, [name]: (values ?? ['x']).join(',') },
            `path ${name}: ${label}`,
          ),
        ),
    );
  }
  // The unbroken request too: a route must not fail on the values its own document proposes.
  choices.push(fc.constant(build(body ?? undefined, query, params, 'as documented')));
  return fc.oneof(...choices);
}
