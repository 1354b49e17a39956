import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * Every TapyardError a lib of this list creates carries a domain code, so its error body's `code` is
 * `<domain>.<what>` and never only the HTTP class: the error is built as `new XError(…).coded(Code)`, or
 * its class (or an ancestor below TapyardError) sets `domainCode`. Read from the sources (the compiler's
 * syntax tree, no type checking): a lib joins the list once every error it creates is coded.
 */
const CODED_LIBS = [
  'ai',
  'configfiles',
  'destinations',
  'documents',
  'embeddings',
  'incidents',
  'ingestion',
  'intake',
  'metadata',
  'nl-query',
  'sandbox',
  'schemas',
  'secrets',
  'vector-stores',
];

const root = join(__dirname, '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

function parse(path: string): ts.SourceFile {
  return ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
}

function visit(node: ts.Node, each: (node: ts.Node) => void): void {
  each(node);
  node.forEachChild((child) => visit(child, each));
}

/** Every class of the project: its base class's name, and whether its body sets `domainCode`. */
function classes(files: ts.SourceFile[]): Map<string, { base: string | null; coded: boolean }> {
  const found = new Map<string, { base: string | null; coded: boolean }>();
  for (const file of files) {
    visit(file, (node) => {
      if (!ts.isClassDeclaration(node) || !node.name) return;
      const extendsClause = node.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword);
      const base = extendsClause?.types[0].expression;
      const coded = node.members.some(
        (m) => ts.isPropertyDeclaration(m) && m.name.getText(file) === 'domainCode' && !!m.initializer,
      );
      found.set(node.name.text, { base: base && ts.isIdentifier(base) ? base.text : null, coded });
    });
  }
  return found;
}

/** `new X(…)` of a TapyardError class without a domain code, as `file:line X`. */
function uncoded(files: ts.SourceFile[], all: ReturnType<typeof classes>): string[] {
  /** null: not a TapyardError; true/false: whether the class or an ancestor sets its code. */
  const codedError = (name: string): boolean | null => {
    let coded = false;
    for (let at: string | null = name, depth = 0; at && depth < 20; depth++) {
      if (at === 'TapyardError') return coded;
      const cls = all.get(at);
      if (!cls) return null;
      coded ||= cls.coded;
      at = cls.base;
    }
    return null;
  };
  const misses: string[] = [];
  for (const file of files) {
    visit(file, (node) => {
      if (!ts.isNewExpression(node) || !ts.isIdentifier(node.expression)) return;
      if (codedError(node.expression.text) !== false) return;
      const parent = node.parent;
      const tagged =
        ts.isPropertyAccessExpression(parent) &&
        parent.name.text === 'coded' &&
        ts.isCallExpression(parent.parent) &&
        parent.parent.arguments.length === 1;
      if (tagged) return;
      const { line } = file.getLineAndCharacterOfPosition(node.getStart(file));
      misses.push(`${relative(root, file.fileName)}:${line + 1} ${node.expression.text}`);
    });
  }
  return misses;
}

describe('domain error codes', () => {
  const project = ['libs', 'apps'].flatMap((top) =>
    readdirSync(join(root, top)).flatMap((name) => sourceFiles(join(root, top, name))),
  );
  const files = project.map(parse);
  const all = classes(files);

  it('finds the error classes it checks (the scan sees the hierarchy)', () => {
    expect(all.get('NotFoundError')?.base).toBe('TapyardError');
    expect(all.get('VectorStoreInputError')?.base).toBe('ValidationError');
  });

  it.each(CODED_LIBS)('every TapyardError that libs/%s creates carries a domain code', (lib) => {
    const prefix = join(root, 'libs', lib, 'src');
    expect(
      uncoded(
        files.filter((f) => f.fileName.startsWith(prefix + '/')),
        all,
      ),
    ).toEqual([]);
  });
});
