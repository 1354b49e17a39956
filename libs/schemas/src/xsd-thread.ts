/**
 * xmllint's validation calls of one XsdRecordValidator.check, in a thread of its own: xmllint-wasm
 * starts a worker per call and has no way to stop it, while an XSD's costly `xs:pattern` can take
 * about a second per value. Ending this thread ends the worker it started too.
 */
import { workerData, parentPort } from 'node:worker_threads';
import { validateXML } from 'xmllint-wasm';

/** What check sends: the schema and the documents of each call, in order. */
export interface XsdCalls {
  schema: string;
  calls: { fileName: string; contents: string }[][];
}

/** Each call's errors, in order (the parts of xmllint's error read by check). */
export type XsdThreadReply =
  { ok: true; errors: { message: string; fileName: string | null }[][] } | { ok: false; message: string };

async function run({ schema, calls }: XsdCalls): Promise<XsdThreadReply> {
  const errors: { message: string; fileName: string | null }[][] = [];
  for (const xml of calls) {
    const result = await validateXML({ xml, schema: [{ fileName: 'schema.xsd', contents: schema }] });
    errors.push(result.errors.map((e) => ({ message: e.message, fileName: e.loc?.fileName ?? null })));
  }
  return { ok: true, errors };
}

run((workerData as { data: XsdCalls }).data).then(
  (reply) => parentPort?.postMessage(reply),
  (err: unknown) =>
    parentPort?.postMessage({ ok: false, message: err instanceof Error ? err.message : String(err) }),
);
