import { BroadcastChannel, getEnvironmentData, isMainThread, setEnvironmentData } from 'node:worker_threads';

/**
 * What a probe of this host found (whether bwrap works, where an interpreter's files live), handed to
 * the threads a process starts later so each need not probe again. A large job gets a thread of its own
 * (the one before is let go for its heap), and every new thread ran both probes, two process spawns and
 * some 45 ms of CPU, before its first sandbox. A thread tells the main thread what it found; the main
 * thread keeps it as environment data, which Node copies into every thread started after that.
 */
const CHANNEL = 'tapyard:sandbox-probes';

export type ProbeSpace = 'bwrap' | 'python';

interface Finding {
  space: ProbeSpace;
  key: string;
  value: unknown;
}

function dataName(space: ProbeSpace): string {
  return `${CHANNEL}:${space}`;
}

/** What an earlier thread found for `key`, when this thread was started after it told the main thread. */
export function inherited(space: ProbeSpace, key: string): unknown {
  const known = getEnvironmentData(dataName(space)) as Record<string, unknown> | undefined;
  return known !== undefined && Object.hasOwn(known, key) ? known[key] : undefined;
}

/** Passes a finding on to threads started from now on (through the main thread, when this is not it). */
export function share(space: ProbeSpace, key: string, value: unknown): void {
  if (isMainThread) return record({ space, key, value });
  const channel = new BroadcastChannel(CHANNEL);
  channel.postMessage({ space, key, value } satisfies Finding);
  channel.close();
}

function record({ space, key, value }: Finding): void {
  const known = (getEnvironmentData(dataName(space)) as Record<string, unknown> | undefined) ?? {};
  setEnvironmentData(dataName(space), { ...known, [key]: value });
}

/**
 * In the main thread: keeps what its threads found for the threads it starts later, until the returned
 * function stops it. Holds no reference that keeps the process alive.
 */
export function keepThreadProbes(): () => void {
  const channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = (event) => {
    const f = (event as { data: Finding }).data;
    if ((f.space === 'bwrap' || f.space === 'python') && typeof f.key === 'string') record(f);
  };
  channel.unref();
  return () => channel.close();
}
