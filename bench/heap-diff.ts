/**
 * `node dist/bench/bench/heap-diff.js <before.heapsnapshot> <after.heapsnapshot> [rows]`: what a process
 * holds more of in the second snapshot than in the first, by constructor (or node type: strings, code,
 * arrays), as count and self size; and the objects of the second that were not in the first (V8 keeps an
 * object's id across snapshots of one process), i.e. what was allocated in between and survived.
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

interface Group {
  count: number;
  bytes: number;
}

function groups(path: string): {
  all: Map<string, Group>;
  byId: Map<number, string>;
  sizes: Map<number, number>;
} {
  const s = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
  const fields = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0];
  const [TYPE, NAME, ID, SIZE] = ['type', 'name', 'id', 'self_size'].map((f) => fields.indexOf(f));
  const all = new Map<string, Group>();
  const byId = new Map<number, string>();
  const sizes = new Map<number, number>();
  for (let i = 0; i < s.nodes.length; i += fields.length) {
    const type = types[s.nodes[i + TYPE]];
    // Objects by constructor; strings, code, arrays and the rest by their type (their names are contents).
    const key = type === 'object' || type === 'native' ? s.strings[s.nodes[i + NAME]] : `(${type})`;
    const size = s.nodes[i + SIZE];
    const g = all.get(key) ?? { count: 0, bytes: 0 };
    g.count++;
    g.bytes += size;
    all.set(key, g);
    byId.set(s.nodes[i + ID], key);
    sizes.set(s.nodes[i + ID], size);
  }
  return { all, byId, sizes };
}

function print(title: string, rows: [string, Group][], limit: number): void {
  console.log(title);
  for (const [key, g] of rows.slice(0, limit))
    console.log(`  ${(g.bytes / 1024).toFixed(0).padStart(9)} KB ${String(g.count).padStart(8)}  ${key}`);
}

function main(): void {
  const [beforePath, afterPath, limitArg] = process.argv.slice(2);
  if (!beforePath || !afterPath)
    throw new Error('usage: heap-diff <before.heapsnapshot> <after.heapsnapshot> [rows]');
  const limit = Number(limitArg ?? 25);
  const before = groups(beforePath);
  const after = groups(afterPath);
  const total = (m: Map<string, Group>): number => [...m.values()].reduce((sum, g) => sum + g.bytes, 0);
  console.log(
    `self sizes: ${(total(before.all) / 1048576).toFixed(1)} MB → ${(total(after.all) / 1048576).toFixed(1)} MB`,
  );
  const delta = [...after.all].map(([key, g]): [string, Group] => {
    const b = before.all.get(key) ?? { count: 0, bytes: 0 };
    return [key, { count: g.count - b.count, bytes: g.bytes - b.bytes }];
  });
  print(
    'grew most (self size, count):',
    [...delta].sort((a, b) => b[1].bytes - a[1].bytes),
    limit,
  );
  print(
    'by count:',
    [...delta].sort((a, b) => b[1].count - a[1].count),
    limit,
  );
  const fresh = new Map<string, Group>();
  for (const [id, key] of after.byId) {
    if (before.byId.has(id)) continue;
    const g = fresh.get(key) ?? { count: 0, bytes: 0 };
    g.count++;
    g.bytes += after.sizes.get(id) ?? 0;
    fresh.set(key, g);
  }
  print(
    'allocated between the two and still alive:',
    [...fresh].sort((a, b) => b[1].bytes - a[1].bytes),
    limit,
  );
}

main();
