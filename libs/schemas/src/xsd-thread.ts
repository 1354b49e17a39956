/**
 * xmllint's validation calls of one XsdRecordValidator's checks, in a thread of its own (kept between
 * a job's batches, see CheckThread): an XSD's costly `xs:pattern` can take about a second per value,
 * and nothing stops libxml2 mid-call but ending its thread.
 *
 * The package's `validateXML` starts a worker per call, which loads the emscripten module and
 * compiles libxml2's WebAssembly again: some 100 ms a call, most of a call of 2,000 ordinary records.
 * This thread runs that same module itself, compiled once: each call instantiates it with fresh
 * memory (as each of the package's workers did), with the package's arguments and memory bounds.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { workerData, parentPort } from 'node:worker_threads';

/** The documents of one xmllint call. */
export type XsdCall = { fileName: string; contents: string }[];

/** What a check sends: the documents of each call, in order (the schema came with the thread). */
export interface XsdCheck {
  id: number;
  calls: XsdCall[];
}

/** Each call's errors, in order (the parts of xmllint's error read by check), for the check `id`. */
export type XsdThreadReply = { id: number } & (
  { ok: true; errors: { message: string; fileName: string | null }[][] } | { ok: false; message: string }
);

type XsdError = { message: string; fileName: string | null };

/** What this thread uses of WebAssembly (the project's TypeScript libraries do not declare it). */
interface Wasm {
  Memory: new (pages: { initial: number; maximum: number }) => object;
  compile(bytes: Uint8Array): Promise<object>;
  instantiate(module: object, imports: object): Promise<object>;
}
const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;

/** The emscripten module of xmllint-wasm's own worker (its `inputFiles` are written before main runs). */
type XmllintModule = (options: {
  inputFiles: { fileName: string; contents: string }[];
  arguments: string[];
  print: (line: string) => void;
  printErr: (line: string) => void;
  onExit: (code: number) => void;
  onAbort: (reason: unknown) => void;
  wasmMemory: object;
  instantiateWasm: (imports: object, done: (instance: object, module: object) => void) => object;
}) => Promise<unknown>;

/** The package's default memory bounds, in 64 KiB pages: 16 MiB at first, at most 32 MiB. */
const INITIAL_PAGES = 256;
const MAX_PAGES = 512;

/** xmllint's exit codes for "ran, some file did not validate" (3: invalid, 4: the schema's own errors). */
const INVALID = new Set([3, 4]);

async function validate(
  xmllint: XmllintModule,
  compiled: object,
  schema: string,
  xml: XsdCall,
): Promise<XsdError[]> {
  let stderr = '';
  const exitCode = await new Promise<number>((resolve, reject) => {
    xmllint({
      inputFiles: [...xml, { fileName: 'schema.xsd', contents: schema }],
      arguments: ['--schema', 'schema.xsd', '--noout', ...xml.map((f) => f.fileName)],
      print: () => undefined,
      printErr: (line) => (stderr += `${line}\n`),
      onExit: resolve,
      onAbort: (reason) => reject(new Error(`xmllint aborted: ${String(reason)}`)),
      wasmMemory: new wasm.Memory({ initial: INITIAL_PAGES, maximum: MAX_PAGES }),
      instantiateWasm: (imports, done) => {
        wasm.instantiate(compiled, imports).then((instance) => done(instance, compiled), reject);
        return {};
      },
    }).catch(reject);
  });
  if (exitCode === 0) return [];
  if (!INVALID.has(exitCode)) throw new Error(stderr.trim() || `xmllint ended with ${exitCode}`);
  return stderr
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trim().endsWith(' validates'))
    .map((line) => {
      // "<file>:<line>: <message>", or a line of its own (a file's "fails to validate").
      const [fileName, lineNumber, ...rest] = line.split(':');
      return fileName && lineNumber && rest.length > 0
        ? { fileName, message: rest.join(':').trim() }
        : { fileName: null, message: line };
    });
}

/** xmllint and libxml2 compiled, loaded by the first check. */
let engine: Promise<{ xmllint: XmllintModule; compiled: object }> | null = null;

function load(): Promise<{ xmllint: XmllintModule; compiled: object }> {
  // Required here, not imported: loading the module registers its own worker's message listener, which
  // ignores every message without its key (ours have none).
  const from = createRequire(__filename);
  const xmllint = from('xmllint-wasm/xmllint-node.js') as XmllintModule;
  return wasm
    .compile(readFileSync(from.resolve('xmllint-wasm/xmllint.wasm')))
    .then((compiled) => ({ xmllint, compiled }));
}

async function errorsOf(schema: string, calls: XsdCall[]): Promise<XsdError[][]> {
  engine ??= load();
  const { xmllint, compiled } = await engine;
  const errors: XsdError[][] = [];
  for (const xml of calls) errors.push(await validate(xmllint, compiled, schema, xml));
  return errors;
}

const { schema } = (workerData as { data: { schema: string } }).data;
// One check at a time: the validator sends the next once this one answered.
parentPort?.on('message', (msg: XsdCheck) => {
  if (typeof msg?.id !== 'number' || !Array.isArray(msg.calls)) return;
  errorsOf(schema, msg.calls).then(
    (errors) => parentPort?.postMessage({ id: msg.id, ok: true, errors } satisfies XsdThreadReply),
    (err: unknown) =>
      parentPort?.postMessage({
        id: msg.id,
        ok: false,
        message: err instanceof Error ? err.message : String(err),
      } satisfies XsdThreadReply),
  );
});
