import { Job, JobsOptions, Queue, UnrecoverableError } from 'bullmq';
import {
  DocumentPayload,
  IngestJob,
  IngestPayload,
  IntakeEntry,
  IntakePayload,
  JobFields,
  MaintenanceJob,
  PingPayload,
  PingResult,
  QUEUES,
  QueueName,
} from './queues';

/** Every job of every queue: queue → job name → payload. Producers and handlers are typed from it. */
export interface JobMap {
  [QUEUES.maintenance]: { [MaintenanceJob.ping]: PingPayload };
  [QUEUES.ingest]: {
    [IngestJob.load]: IngestPayload;
    [IngestJob.intake]: IntakePayload;
    [IngestJob.document]: DocumentPayload;
  };
}

/** What a job returns, when its result is read (ping round trips); the others return nothing. */
export interface ResultMap {
  [QUEUES.maintenance]: { [MaintenanceJob.ping]: PingResult };
  [QUEUES.ingest]: { [IngestJob.load]: void; [IngestJob.intake]: void; [IngestJob.document]: void };
}

export type JobName<Q extends QueueName> = keyof JobMap[Q] & string;
export type JobPayload<Q extends QueueName, N extends JobName<Q>> = JobMap[Q][N];
type JobResult<Q extends QueueName, N extends JobName<Q>> = N extends keyof ResultMap[Q]
  ? ResultMap[Q][N]
  : never;

/** A job of queue Q as read from Redis and checked: its name tells which payload it carries. */
export type ReadJob<Q extends QueueName> = {
  [N in JobName<Q>]: { queue: Q; name: N; data: JobPayload<Q, N> };
}[JobName<Q>];

/**
 * One handler per job of queue Q: a job added to JobMap without its handler does not compile. `job` is
 * BullMQ's own, for what a handler does with the delivery itself (attempts, deferral, its token).
 */
export type JobHandlers<Q extends QueueName> = {
  [N in JobName<Q>]: (data: JobPayload<Q, N>, job: Job, token?: string) => Promise<JobResult<Q, N>>;
};

/** Runs the handler of a checked job (one place where TypeScript is told name and payload agree). */
export function dispatch<Q extends QueueName>(
  handlers: NoInfer<JobHandlers<Q>>,
  read: ReadJob<Q>,
  job: Job,
  token?: string,
): Promise<unknown> {
  const handler = handlers[read.name] as (data: unknown, job: Job, token?: string) => Promise<unknown>;
  return handler(read.data, job, token);
}

/**
 * The producer side of a queue: `enqueue` takes a job name of Q and that job's payload, both checked
 * at compile time. `bull` is the BullMQ queue, for reads (counts, job lookups).
 */
export class JobQueue<Q extends QueueName> {
  constructor(readonly bull: Queue) {}

  enqueue<N extends JobName<Q>>(name: N, data: JobPayload<Q, N>, opts?: JobsOptions): Promise<Job> {
    return this.bull.add(name, data, opts);
  }
}

/**
 * A job that cannot be run as it is: an unknown name, or a payload missing a field or holding one of the
 * wrong type (written by an older or newer version, or by hand). BullMQ fails an UnrecoverableError at
 * once, without retries. The message names the job and the field, never a value (payloads carry tokens).
 */
export class MalformedJobError extends UnrecoverableError {
  override readonly name = 'MalformedJobError';
}

/** What is wrong with a value: the field in fault (a path; null: the value itself) and the problem. */
interface Fault {
  field: string | null;
  problem: string;
}

/** What is wrong with a value, or null when it fits. */
type Check = (value: unknown) => Fault | null;

/** A check per field of T, optional ones included: a field added to a payload without its check does not compile. */
type Fields<T> = { [K in keyof T]-?: Check };

const kind = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The fault of a value that is not what `expected` says: its kind is told, never the value itself. */
const fault = (value: unknown, expected: string): Fault => ({
  field: null,
  problem: value === undefined ? 'is missing' : `must be ${expected} (got ${kind(value)})`,
});

const typed =
  (type: 'string' | 'number' | 'boolean'): Check =>
  (value) =>
    typeof value === type && (type !== 'number' || Number.isFinite(value)) ? null : fault(value, `a ${type}`);

const str = typed('string');
const num = typed('number');
const bool = typed('boolean');
const optional =
  (check: Check): Check =>
  (value) =>
    value === undefined ? null : check(value);
const nullable =
  (check: Check): Check =>
  (value) =>
    value === null ? null : check(value);
const strings: Check = (value) =>
  Array.isArray(value) && value.every((v) => typeof v === 'string')
    ? null
    : fault(value, 'an array of strings');
const anyObject: Check = (value) => (isRecord(value) ? null : fault(value, 'an object'));

/**
 * An object whose fields pass their checks. Fields it does not know are left alone: a newer version may
 * add optional ones, which this version has no use for.
 */
function object<T>(fields: Fields<T>): Check {
  return (value) => {
    if (!isRecord(value)) return fault(value, 'an object');
    for (const [field, check] of Object.entries<Check>(fields)) {
      const wrong = check(value[field]);
      if (wrong !== null)
        return { field: wrong.field === null ? field : `${field}.${wrong.field}`, problem: wrong.problem };
    }
    return null;
  };
}

const stream = object<{ staleMs: number }>({ staleMs: num });
const intakeEntry = object<IntakeEntry>({
  state: (value) => (value === 'begin' || value === 'end' ? null : fault(value, "'begin' or 'end'")),
  description: str,
  epoch: num,
});
const intakeEntries: Check = (value) => {
  if (!Array.isArray(value)) return fault(value, 'an array');
  for (const [i, entry] of value.entries()) {
    const wrong = intakeEntry(entry);
    if (wrong !== null)
      return { field: `${i}${wrong.field === null ? '' : `.${wrong.field}`}`, problem: wrong.problem };
  }
  return null;
};

const jobFields: Fields<JobFields> = {
  environment: str,
  pipeline: str,
  pipelineToken: str,
  publisherToken: nullable(str),
  filename: str,
};

/** The checks of every payload, shaped like JobMap: a job without its checks does not compile. */
const PAYLOADS: { [Q in QueueName]: { [N in JobName<Q>]: Fields<JobPayload<Q, N>> } } = {
  maintenance: {
    ping: { requestedAt: num },
  },
  ingest: {
    load: {
      ...jobFields,
      staged: str,
      deferrals: optional(num),
      records: optional(
        object<NonNullable<IngestPayload['records']>>({
          keys: strings,
          columns: strings,
          stream: optional(stream),
        }),
      ),
      stream: optional(stream),
      inline: optional(str),
      inlineDropped: optional(num),
      intakeEntries: optional(intakeEntries),
      size: optional(num),
    },
    intake: { ...jobFields, bucket: str, key: str, staged: bool },
    document: {
      ...jobFields,
      bucket: optional(str),
      key: optional(str),
      staged: optional(str),
      inline: optional(str),
      inlineDropped: optional(num),
      intakeEntries: optional(intakeEntries),
      uri: str,
      tap: optional(str),
      metadata: optional(anyObject),
    },
  },
};

/**
 * A job of queue Q as it arrives, checked against its payload type. Throws MalformedJobError, naming
 * the job and the first field in fault, when its name is unknown or its payload does not fit.
 */
export function readJob<Q extends QueueName>(queue: Q, job: Pick<Job, 'id' | 'name' | 'data'>): ReadJob<Q> {
  const payloads: Record<string, Fields<unknown> | undefined> = PAYLOADS[queue];
  const what = `${queue} job '${job.name}' (id ${job.id ?? '?'})`;
  const fields = Object.hasOwn(payloads, job.name) ? payloads[job.name] : undefined;
  if (fields === undefined) {
    throw new MalformedJobError(`${what}: no such job (known: ${Object.keys(payloads).join(', ')})`);
  }
  const wrong = object(fields)(job.data);
  if (wrong !== null) {
    const where = wrong.field === null ? 'its payload' : `field '${wrong.field}'`;
    throw new MalformedJobError(`${what} is malformed: ${where} ${wrong.problem}`);
  }
  return { queue, name: job.name, data: job.data } as ReadJob<Q>;
}

/** The job a malformed ingest payload still names (its five JobFields), or null when even those do not fit. */
export function jobFieldsOf(data: unknown): JobFields | null {
  if (object(jobFields)(data) !== null) return null;
  const { environment, pipeline, pipelineToken, publisherToken, filename } = data as JobFields;
  return { environment, pipeline, pipelineToken, publisherToken, filename };
}
