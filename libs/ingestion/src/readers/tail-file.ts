/**
 * Reads a spool file that is still being written: a tap run streams its records into the spool, or
 * an upload its file, while the job already loads them. The writer ends the stream with a state
 * file beside the spool (`<spool>.state`): `done` (read to the end, then stop), `abort <reason>` (the
 * run or the upload failed: the load must not commit) or `superseded <reason>` (the run restarted
 * its load as another job).
 */
import { open, readFile, rename, writeFile } from 'node:fs/promises';
import { FatalReadError } from './record-batch';

const CHUNK = 1 << 20;

/** The writer behind a streamed load failed or moved its load elsewhere; nothing may be committed. */
export class StreamEndedError extends FatalReadError {
  constructor(
    readonly superseded: boolean,
    message: string,
  ) {
    super(message);
  }
}

export function streamStatePath(spoolPath: string): string {
  return `${spoolPath}.state`;
}

/** Written atomically: a reader sees no state, or the whole state. */
export async function writeStreamState(spoolPath: string, state: string): Promise<void> {
  const path = streamStatePath(spoolPath);
  await writeFile(`${path}.tmp`, state, { mode: 0o600 });
  await rename(`${path}.tmp`, path);
}

async function readState(spoolPath: string): Promise<string | null> {
  return readFile(streamStatePath(spoolPath), 'utf8').catch(() => null);
}

/**
 * Yields the file's bytes as they arrive. `staleMs`: how long the file may stop growing without a
 * state before the writer is presumed dead (the API that ran the tap went away).
 */
export async function* tailFile(path: string, staleMs: number, pollMs = 20): AsyncGenerator<Buffer> {
  const fh = await open(path, 'r');
  try {
    let position = 0;
    let grew = Date.now();
    let finished = false;
    for (;;) {
      const buffer = Buffer.allocUnsafe(CHUNK);
      const { bytesRead } = await fh.read(buffer, 0, CHUNK, position);
      if (bytesRead > 0) {
        position += bytesRead;
        grew = Date.now();
        yield buffer.subarray(0, bytesRead);
        continue;
      }
      // Everything written before `done` is in the file: one more pass to its end, then stop.
      if (finished) return;
      const state = await readState(path);
      if (state === 'done') {
        finished = true;
        continue;
      }
      if (state !== null) {
        const space = state.indexOf(' ');
        const kind = space < 0 ? state : state.slice(0, space);
        throw new StreamEndedError(
          kind === 'superseded',
          space < 0 ? 'the writer ended its stream' : state.slice(space + 1),
        );
      }
      if (Date.now() - grew > staleMs) {
        throw new FatalReadError(
          `the data stopped arriving (nothing for ${Math.round(staleMs / 1000)} s); nothing was loaded`,
        );
      }
      await new Promise((r) => setTimeout(r, pollMs));
    }
  } finally {
    await fh.close();
  }
}
