/**
 * What validating a record against a JSON Schema may cost, counted on the schema before it runs.
 * Each `pattern` is linear (compileLinearRegex) but can take tens of milliseconds on an 8 KB value
 * (re2js near its 1,024-instruction bound), and a schema could hold any number of them: 64 took
 * 1.8 s a record. So a schema has at most as many patterns as a column has rules (16), and at most
 * 4,096 subschemas (compiling 50,000 took Ajv 4 s on the API's thread).
 *
 * Both are counted as validation applies them: a `$ref` counts its target each time it is used
 * (`{"allOf": [{"$ref": "#/$defs/p"} ×100]}` runs `p`'s pattern 100 times on a value), a `$ref` back
 * to a schema that encloses it (recursion into the value) counts once, and a definition no one uses
 * counts nothing.
 */
import { SchemaObject, indexDocument, isSchemaObject, schemaEdges } from './json-schema-cycles';

/** Most `pattern` keywords and `patternProperties` patterns a JSON Schema may apply (as a column's rules). */
export const MAX_SCHEMA_PATTERNS = 16;
/** Most subschemas a JSON Schema may apply. */
export const MAX_SCHEMA_SUBSCHEMAS = 4096;

export interface SchemaCost {
  /** Patterns validation may apply (`pattern`, each key of `patternProperties`), counting a `$ref`'s at each use. */
  patterns: number;
  /** Subschemas validation may apply, the root included; stops counting past MAX_SCHEMA_SUBSCHEMAS. */
  subschemas: number;
  /** A `$ref` leads back to a schema that encloses it: the schema applies again to each level of the value. */
  recursive: boolean;
}

/** Counts what validating against `root` applies (see the module's comment). */
export function schemaCost(root: unknown): SchemaCost {
  const cost: SchemaCost = { patterns: 0, subschemas: 0, recursive: false };
  if (!isSchemaObject(root)) return cost;
  const index = indexDocument(root);
  // Depth-first over the schema as validation unfolds it, iteratively; `open`: the enclosing schemas.
  const open = new Set<SchemaObject>();
  const stack: { node: SchemaObject; leave: boolean }[] = [{ node: root, leave: false }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { node } = item;
    if (item.leave) {
      open.delete(node);
      continue;
    }
    if (++cost.subschemas > MAX_SCHEMA_SUBSCHEMAS) break;
    if (typeof node.pattern === 'string') cost.patterns++;
    if (isSchemaObject(node.patternProperties)) cost.patterns += Object.keys(node.patternProperties).length;
    open.add(node);
    stack.push({ node, leave: true });
    for (const { to } of schemaEdges(index, node, false)) {
      // Only a reference leads back (a loop on the same value was refused by findSelfApplication).
      if (open.has(to)) cost.recursive = true;
      else stack.push({ node: to, leave: false });
    }
  }
  return cost;
}

/** Why a schema of this cost is refused, or null. */
export function costProblem(cost: SchemaCost): string | null {
  if (cost.subschemas > MAX_SCHEMA_SUBSCHEMAS) {
    return (
      `it applies more than ${MAX_SCHEMA_SUBSCHEMAS} subschemas (a $ref counts its target each time it is used), ` +
      'more than a schema may have'
    );
  }
  if (cost.patterns > MAX_SCHEMA_PATTERNS) {
    return (
      `it applies ${cost.patterns} patterns (pattern and patternProperties; a $ref counts its target's each time ` +
      `it is used), more than the ${MAX_SCHEMA_PATTERNS} a schema may have (each runs on every value it applies to)`
    );
  }
  return null;
}

/** A schema with no pattern, no recursion and this many subschemas at most runs on the worker's main thread. */
export const MAIN_THREAD_SUBSCHEMAS = 256;
/** …and a text this long at most (it bounds `enum` and `const`, which compare each value with theirs). */
export const MAIN_THREAD_SCHEMA_CHARS = 32 * 1024;

/**
 * Whether a JSON Schema's text is cheap enough to check a small inline upload on the worker's main
 * thread, which has no watchdog: no pattern, no recursion (a recursive schema can apply a subschema
 * several times to each level of the value), at most MAIN_THREAD_SUBSCHEMAS subschemas, each
 * applied at most once per value of a record of at most 32 KiB. False for a text that does not parse:
 * the stage thread reports it.
 */
export function jsonSchemaSuitsMainThread(text: string): boolean {
  if (text.length > MAIN_THREAD_SCHEMA_CHARS) return false;
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch {
    return false;
  }
  if (!isSchemaObject(schema)) return false;
  const cost = schemaCost(schema);
  return cost.patterns === 0 && !cost.recursive && cost.subschemas <= MAIN_THREAD_SUBSCHEMAS;
}
