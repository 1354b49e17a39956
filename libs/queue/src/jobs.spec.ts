import { join } from 'node:path';
import { UnrecoverableError } from 'bullmq';
import ts from 'typescript';
import { MalformedJobError, jobFieldsOf, readJob } from './jobs';
import { IngestJob, IngestPayload, QUEUES } from './queues';

const load: IngestPayload = {
  environment: 'dev',
  pipeline: 'p',
  pipelineToken: 'tok-secret-1',
  publisherToken: null,
  filename: 'a.csv',
  staged: 'tok-secret-1',
  records: { keys: ['a'], columns: ['a'], stream: { staleMs: 1000 } },
};

const reason = (name: string, data: unknown): string => {
  try {
    readJob(QUEUES.ingest, { id: '7', name, data });
  } catch (err) {
    expect(err).toBeInstanceOf(MalformedJobError);
    // BullMQ fails an UnrecoverableError at once: a malformed job is never retried.
    expect(err).toBeInstanceOf(UnrecoverableError);
    return (err as Error).message;
  }
  throw new Error('the job was read');
};

describe('readJob', () => {
  it('reads every job of the map whose payload fits, extra fields left alone', () => {
    expect(readJob(QUEUES.ingest, { id: '1', name: IngestJob.load, data: load })).toEqual({
      queue: 'ingest',
      name: 'load',
      data: load,
    });
    const intake = { ...load, bucket: 'b', key: 'k/', staged: true, addedByANewerVersion: 1 };
    expect(readJob(QUEUES.ingest, { id: '2', name: IngestJob.intake, data: intake }).data).toBe(intake);
    const document = { ...load, staged: undefined, bucket: 'b', key: 'k', uri: 'x://d', metadata: { a: 1 } };
    expect(readJob(QUEUES.ingest, { id: '3', name: IngestJob.document, data: document }).name).toBe(
      'document',
    );
    expect(readJob(QUEUES.maintenance, { id: '4', name: 'ping', data: { requestedAt: 1 } }).data).toEqual({
      requestedAt: 1,
    });
  });

  it('names an unknown job and the jobs it knows', () => {
    expect(reason('reindex', load)).toBe(
      "ingest job 'reindex' (id 7): no such job (known: load, intake, document)",
    );
    // A name inherited by every object is no job either.
    expect(reason('constructor', load)).toContain('no such job');
  });

  it('names the job and the field in fault, never the value', () => {
    const { staged: _, ...noStaged } = load;
    expect(reason('load', noStaged)).toBe("ingest job 'load' (id 7) is malformed: field 'staged' is missing");
    expect(reason('load', { ...load, pipelineToken: 42 })).toBe(
      "ingest job 'load' (id 7) is malformed: field 'pipelineToken' must be a string (got number)",
    );
    expect(reason('load', { ...load, publisherToken: undefined })).toContain(
      "field 'publisherToken' is missing",
    );
    expect(reason('load', { ...load, records: { ...load.records, keys: 'tok-secret-1' } })).toBe(
      "ingest job 'load' (id 7) is malformed: field 'records.keys' must be an array of strings (got string)",
    );
    expect(reason('load', { ...load, stream: { staleMs: 'soon' } })).toContain(
      "field 'stream.staleMs' must be a number (got string)",
    );
    expect(reason('intake', { ...load, bucket: 'b', key: 'k', staged: 'yes' })).toContain(
      "field 'staged' must be a boolean (got string)",
    );
    expect(reason('load', { ...load, environment: ['tok-secret-1'] })).not.toContain('tok-secret-1');
    const entry = { state: 'end', description: 'received 9 bytes', epoch: 1 };
    expect(
      readJob(QUEUES.ingest, { id: '5', name: 'load', data: { ...load, intakeEntries: [entry] } }).name,
    ).toBe('load');
    expect(reason('load', { ...load, intakeEntries: [entry, { ...entry, state: 'error' }] })).toBe(
      "ingest job 'load' (id 7) is malformed: field 'intakeEntries.1.state' must be 'begin' or 'end' (got string)",
    );
    expect(reason('load', { ...load, intakeEntries: [{ ...entry, epoch: 'now' }] })).toContain(
      "field 'intakeEntries.0.epoch' must be a number (got string)",
    );
    expect(reason('load', { ...load, intakeEntries: entry })).toContain(
      "field 'intakeEntries' must be an array (got object)",
    );
  });

  it('refuses a payload that is not an object', () => {
    expect(reason('load', null)).toBe(
      "ingest job 'load' (id 7) is malformed: its payload must be an object (got null)",
    );
    expect(reason('load', [load])).toContain('its payload must be an object (got array)');
  });
});

describe('jobFieldsOf', () => {
  it('gives the job a malformed payload still names, and nothing else of it', () => {
    const { staged: _, ...noStaged } = load;
    expect(jobFieldsOf({ ...noStaged, extra: 'x' })).toEqual({
      environment: 'dev',
      pipeline: 'p',
      pipelineToken: 'tok-secret-1',
      publisherToken: null,
      filename: 'a.csv',
    });
    expect(jobFieldsOf({ ...load, pipelineToken: undefined })).toBeNull();
    expect(jobFieldsOf('load')).toBeNull();
  });
});

/**
 * Every other file (the standard library, @types/node, BullMQ's and the project's own modules) is the
 * same for each case: parsed once, not once a case.
 */
const parsed = new Map<string, ts.SourceFile | undefined>();

/**
 * What TypeScript says of a module beside jobs.ts: each case below must fail to compile, which only the
 * compiler can tell (Jest transpiles without type checking).
 */
function compileErrors(body: string): string[] {
  const file = join(__dirname, 'typed-jobs-check.ts');
  const source = `import { JobHandlers, JobQueue } from './jobs';
import { IngestJob, IngestPayload } from './queues';
declare const queue: JobQueue<'ingest'>;
declare const load: IngestPayload;
const run = async (): Promise<void> => undefined;
${body}
`;
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    types: ['node'],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, version, ...rest) => {
    if (name === file) return ts.createSourceFile(name, source, version);
    if (!parsed.has(name)) parsed.set(name, getSourceFile.call(host, name, version, ...rest));
    return parsed.get(name);
  };
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? source : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('producers and handler maps are checked at compile time', () => {
  it('a job named with its own payload, and a handler per job, compile', () => {
    expect(
      compileErrors(`
        void queue.enqueue(IngestJob.load, load);
        void queue.enqueue(IngestJob.intake, { ...load, bucket: 'b', key: 'k', staged: true });
        export const all = { load: run, intake: run, document: run } satisfies JobHandlers<'ingest'>;`),
    ).toEqual([]);
  });

  it.each([
    [
      'a payload missing a field',
      `void queue.enqueue(IngestJob.load, { ...load, staged: undefined });`,
      "Type 'undefined' is not assignable to type 'string'",
    ],
    [
      'a field of the wrong type',
      `void queue.enqueue(IngestJob.intake, { ...load, bucket: 'b', key: 'k' });`,
      "Types of property 'staged' are incompatible",
    ],
    [
      'a field no payload has',
      `void queue.enqueue(IngestJob.load, { ...load, stagedd: 'x' });`,
      "'stagedd' does not exist in type 'IngestPayload'",
    ],
    [
      'a job name the queue does not have',
      `void queue.enqueue('reindex', load);`,
      `Argument of type '"reindex"' is not assignable`,
    ],
    [
      "another queue's job",
      `void queue.enqueue('ping', { requestedAt: 1 });`,
      `Argument of type '"ping"' is not assignable`,
    ],
    [
      'a handler map missing a job',
      `export const some = { load: run, intake: run } satisfies JobHandlers<'ingest'>;`,
      "Property 'document' is missing",
    ],
  ])('%s does not compile', (_, body, error) => {
    expect(compileErrors(body).join('\n')).toContain(error);
  });
});
