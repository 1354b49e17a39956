import { unlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel, MessagePort } from 'node:worker_threads';
import { RejectedRow } from '@tapyard/destinations';
import { Spool, Staging } from '@tapyard/intake';
import { PipelineDefinition } from '@tapyard/model';
import { IngestPayload } from '@tapyard/queue';
import { StageThreadPool } from './stage-thread/stage-thread';
import { sendInput } from './stage-thread/input-channel';
import { counted, inlineInput, noRejects, readRejects } from './job-input';
import { LocalStage, StageRun, runsOnMainThread } from './local-stage';
import { PartBuffers } from './part-buffers';

/** How long a job's end waits for the read of its input to stop. */
const READ_STOP_WAIT_MS = 5000;

export interface StageDeps {
  threads: StageThreadPool;
  staging: Staging;
  spool: Spool;
  stallMs: number;
  maxIdle: number;
  /** Stage threads busy at once (LARGE_JOB_CONCURRENCY). */
  maxBusy: number;
  spinOn: string | null;
}

/** A job's stage: where its input is read and checked, with what the job's end must clean up. */
export interface JobStage {
  session: StageRun;
  /** Bytes of the input read so far (the job's progress). */
  read: { bytes: number };
  /** The staged input's part buffers, which the batches give back once written (null: no staged input). */
  parts: PartBuffers | null;
  /** The rows the stage rejected, once its input has ended (`rejected`: how many it counted). */
  rejects(rejected: number): AsyncIterable<RejectedRow>;
  /** After `session.end()`: stops reading the input and removes the rejects file. */
  close(): Promise<void>;
}

/**
 * Starts the stage of a job: a stage thread under a watchdog, fed the staged input as it arrives (or
 * the input the job carried, whole), or, for a small whole input without scripts, a LocalStage on
 * this thread with the same functions (no thread messages, rejects in memory, no spool file).
 * `schema`: the pipeline's validation schema, read before for a small whole input (null: none).
 */
export async function openStage(
  deps: StageDeps,
  p: IngestPayload,
  def: PipelineDefinition,
  fast: boolean,
  schema: { file: string; text: string } | null,
): Promise<JobStage> {
  // A small upload's input, carried in its job.
  const whole = p.inline !== undefined ? inlineInput(p.inline) : null;
  const read = { bytes: whole?.byteLength ?? 0 };
  if (whole !== null && runsOnMainThread(p, def, deps.spinOn, schema)) {
    const local = new LocalStage({ input: Buffer.from(whole), definition: def, filename: p.filename, fast });
    return {
      session: local,
      read,
      parts: null,
      rejects: () => local.rejects(),
      close: async () => undefined,
    };
  }
  const rejectsPath = `${await deps.spool.reserve(p.environment, p.pipelineToken)}.rejects`;
  const reading = new AbortController();
  let input: MessagePort | ArrayBuffer;
  let sending: Promise<void> = Promise.resolve();
  let parts: PartBuffers | null = null;
  if (whole !== null) {
    // Whole with the thread's start: no channel and its messages.
    input = whole;
  } else {
    const { port1, port2 } = new MessageChannel();
    parts = new PartBuffers();
    const staged = deps.staging.read(p.environment, p.staged, {
      reader: p.pipelineToken,
      signal: reading.signal,
      staleMs: (p.stream ?? p.records?.stream)?.staleMs,
      memory: parts.memory,
    });
    sending = sendInput(counted(staged, read), port1, reading.signal);
    input = port2;
  }
  // A request to the store that hangs must not hold the job's end.
  const stopReading = async () => {
    // An input carried in the job is read by nothing (and a timer per job is not free).
    if (whole !== null) return;
    reading.abort();
    await Promise.race([sending, sleep(READ_STOP_WAIT_MS, undefined, { ref: false })]);
  };
  const session = await deps.threads
    .start(
      {
        input,
        records: p.records ? { keys: p.records.keys, columns: p.records.columns } : null,
        definition: def,
        filename: p.filename,
        rejectsPath,
        spinOn: deps.spinOn,
        fast,
      },
      { stallMs: deps.stallMs, maxIdle: deps.maxIdle, maxBusy: deps.maxBusy },
    )
    .catch(async (err: unknown) => {
      await stopReading();
      throw err;
    });
  if (parts !== null) parts.onBinaryWritten = (b) => session.giveBack(b);
  return {
    session,
    read,
    parts,
    // The file is opened only when the thread, at the input's end, counted rejected rows: most jobs
    // have none, and its system calls were a visible part of a small job's cost.
    rejects: (rejected) => (session.finished && rejected === 0 ? noRejects() : readRejects(rejectsPath)),
    close: async () => {
      await stopReading();
      // unlink: one system call where rm() makes three (two lstat first), per job.
      await unlink(rejectsPath).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    },
  };
}
