/**
 * Finds a JSON Schema that applies itself to the same value again (`{"$ref": "#"}`, or a `$ref`
 * reached through `allOf`, `not`, `if`…): Ajv compiles it, then every validation recurses until the
 * stack overflows. A `$ref` that first moves into the value (`properties`, `items`…) is fine: the
 * value is finite. Found statically rather than by validating a probe value, which could not see a
 * loop only some values take and would run a user's schema on the API's thread.
 */

export type SchemaObject = Record<string, unknown>;

/** Keywords whose subschemas apply to the value itself (Ajv's 2020-12 vocabularies). */
const SAME_VALUE_ONE = ['not', 'if', 'then', 'else'];
const SAME_VALUE_LIST = ['allOf', 'anyOf', 'oneOf'];
const SAME_VALUE_MAP = ['dependentSchemas', 'dependencies'];
/** Keywords whose subschemas apply to a part of the value (a property, an item, a key). */
const INNER_ONE = [
  'additionalProperties',
  'unevaluatedProperties',
  'propertyNames',
  'items',
  'additionalItems',
  'contains',
  'unevaluatedItems',
];
const INNER_LIST = ['prefixItems', 'items'];
const INNER_MAP = ['properties', 'patternProperties'];
/** Where subschemas sit, as Ajv looks for `$id` and anchors: elsewhere (`const`, `enum`…) is data. */
const SCHEMA_KEYWORDS = new Set([...SAME_VALUE_ONE, ...INNER_ONE]);
const LIST_KEYWORDS = new Set([...SAME_VALUE_LIST, ...INNER_LIST]);
const MAP_KEYWORDS = new Set([...SAME_VALUE_MAP, ...INNER_MAP, '$defs', 'definitions']);
/** Base URI of a schema without `$id`, so relative references resolve as Ajv resolves them. */
const DOCUMENT_BASE = 'tapyard:///schema.json';

export interface SelfApplication {
  /** The keyword that closes the loop (`$ref`, `$dynamicRef`…). */
  keyword: string;
  /** JSON pointers (`#/$defs/a`) of the schema holding it and of the schema it leads back to. */
  from: string;
  to: string;
}

export interface Edge {
  keyword: string;
  to: SchemaObject;
}

export function isSchemaObject(value: unknown): value is SchemaObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function objectOf(value: unknown): SchemaObject {
  return isSchemaObject(value) ? value : {};
}

function withoutFragment(url: URL): string {
  const copy = new URL(url.href);
  copy.hash = '';
  return copy.href;
}

function decodeFragment(hash: string): string | null {
  try {
    return decodeURIComponent(hash.replace(/^#/, ''));
  } catch {
    return null;
  }
}

/** The first loop through same-value keywords that validating some value would enter, or null. */
export function findSelfApplication(root: unknown): SelfApplication | null {
  if (!isSchemaObject(root)) return null;
  const index = indexDocument(root);
  const edges = (node: SchemaObject, sameValueOnly: boolean) => schemaEdges(index, node, sameValueOnly);

  // The schemas validation can reach; a loop in an unused definition never runs.
  const reachable = new Set<SchemaObject>([root]);
  const pending = [root];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    for (const { to } of edges(node, false)) {
      if (!reachable.has(to)) {
        reachable.add(to);
        pending.push(to);
      }
    }
  }

  // Depth-first over same-value edges, iteratively: a back edge to a schema still open is a loop.
  const done = new Set<SchemaObject>();
  const open = new Set<SchemaObject>();
  for (const start of reachable) {
    if (done.has(start)) continue;
    const stack: { node: SchemaObject; next: Edge[] }[] = [{ node: start, next: edges(start, true) }];
    open.add(start);
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const edge = top.next.pop();
      if (edge === undefined) {
        stack.pop();
        open.delete(top.node);
        done.add(top.node);
      } else if (open.has(edge.to)) {
        return { keyword: edge.keyword, from: index.pointer(top.node), to: index.pointer(edge.to) };
      } else if (!done.has(edge.to)) {
        open.add(edge.to);
        stack.push({ node: edge.to, next: edges(edge.to, true) });
      }
    }
  }
  return null;
}

/**
 * The subschemas validation applies from `node`: to the same value (`allOf`, `not`, `$ref`…), and
 * unless `sameValueOnly`, to a part of it (`properties`, `items`…).
 */
export function schemaEdges(index: SchemaIndex, node: SchemaObject, sameValueOnly: boolean): Edge[] {
  const out: Edge[] = [];
  const add = (keyword: string, value: unknown) => {
    if (isSchemaObject(value)) out.push({ keyword, to: value });
  };
  const addAll = (one: string[], list: string[], map: string[]) => {
    for (const k of one) add(k, node[k]);
    for (const k of list) for (const v of arrayOf(node[k])) add(k, v);
    for (const k of map) for (const v of Object.values(objectOf(node[k]))) add(k, v);
  };
  addAll(SAME_VALUE_ONE, SAME_VALUE_LIST, SAME_VALUE_MAP);
  for (const k of ['$ref', '$dynamicRef', '$recursiveRef']) {
    const ref = node[k];
    if (typeof ref === 'string') for (const target of index.resolve(node, k, ref)) add(k, target);
  }
  if (!sameValueOnly) addAll(INNER_ONE, INNER_LIST, INNER_MAP);
  return out;
}

export type SchemaIndex = ReturnType<typeof indexDocument>;

/** Where each schema sits (for messages), its base URI, and what `$id`s and anchors name. */
export function indexDocument(root: SchemaObject) {
  const parents = new Map<object, { parent: object; key: string }>();
  const bases = new Map<object, string>();
  const resources = new Map<string, SchemaObject>();
  const anchors = new Map<string, SchemaObject>();
  const dynamicAnchors = new Map<string, SchemaObject[]>();
  const recursiveAnchors: SchemaObject[] = [];
  resources.set(DOCUMENT_BASE, root);

  /** `schema`: a schema; `list`, `map`: schemas inside; `data`: none (const, enum, unknown keywords). */
  type Position = 'schema' | 'list' | 'map' | 'data';
  const pending: { node: object; base: string; position: Position }[] = [
    { node: root, base: DOCUMENT_BASE, position: 'schema' },
  ];
  const positionOf = (parent: Position, key: string, child: object): Position => {
    if (parent === 'list' || parent === 'map') return 'schema';
    if (parent === 'data') return 'data';
    if (Array.isArray(child)) return LIST_KEYWORDS.has(key) ? 'list' : 'data';
    if (MAP_KEYWORDS.has(key)) return 'map';
    return SCHEMA_KEYWORDS.has(key) ? 'schema' : 'data';
  };
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const { node, position } = item;
    let base = item.base;
    if (isSchemaObject(node) && position === 'schema') {
      if (typeof node.$id === 'string') {
        try {
          const id = new URL(node.$id, base);
          base = withoutFragment(id);
          resources.set(base, node);
          if (id.hash.length > 1) anchors.set(id.href, node);
        } catch {
          // Ajv refused such an `$id` already; nothing can refer to it.
        }
      }
      if (typeof node.$anchor === 'string') anchors.set(`${base}#${node.$anchor}`, node);
      if (typeof node.$dynamicAnchor === 'string') {
        anchors.set(`${base}#${node.$dynamicAnchor}`, node);
        const named = dynamicAnchors.get(node.$dynamicAnchor) ?? [];
        named.push(node);
        dynamicAnchors.set(node.$dynamicAnchor, named);
      }
      if (node.$recursiveAnchor === true) recursiveAnchors.push(node);
    }
    bases.set(node, base);
    for (const [key, child] of Object.entries(node)) {
      if (typeof child !== 'object' || child === null) continue;
      parents.set(child, { parent: node, key });
      pending.push({ node: child, base, position: positionOf(position, key, child) });
    }
  }

  const follow = (from: SchemaObject, pointer: string): SchemaObject | null => {
    let at: unknown = from;
    for (const raw of pointer.split('/').slice(1)) {
      const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
      if (typeof at !== 'object' || at === null || !Object.hasOwn(at, key)) return null;
      at = (at as Record<string, unknown>)[key];
    }
    return isSchemaObject(at) ? at : null;
  };

  return {
    /** The schemas a reference may lead to: its target, and for dynamic ones every matching anchor. */
    resolve(node: SchemaObject, keyword: string, ref: string): SchemaObject[] {
      let url: URL;
      try {
        url = new URL(ref, bases.get(node) ?? DOCUMENT_BASE);
      } catch {
        return [];
      }
      const fragment = decodeFragment(url.hash);
      const resource = resources.get(withoutFragment(url));
      const found: SchemaObject[] = [];
      if (resource !== undefined && fragment !== null) {
        const target =
          fragment === '' || fragment.startsWith('/')
            ? follow(resource, fragment)
            : anchors.get(`${withoutFragment(url)}#${fragment}`);
        if (target) found.push(target);
      }
      if (keyword === '$dynamicRef' && fragment) found.push(...(dynamicAnchors.get(fragment) ?? []));
      if (keyword === '$recursiveRef') found.push(...recursiveAnchors);
      return found;
    },
    /** `#/$defs/a` from the document's root, whatever `$id`s lie between. */
    pointer(node: object): string {
      const keys: string[] = [];
      for (let at = parents.get(node); at !== undefined; at = parents.get(at.parent)) {
        keys.push(at.key.replaceAll('~', '~0').replaceAll('/', '~1'));
      }
      return `#${keys
        .reverse()
        .map((k) => `/${k}`)
        .join('')}`;
    },
  };
}
