/** The tail of the queue of operations on each cache directory, while one is queued or running. */
const tails = new Map<string, Promise<void>>();

/**
 * Runs `task` after every earlier task on the same directory settled: two requests fetching into one
 * cache at once would race on its refs and temporary files. Within this process only.
 */
export function withDirectoryLock<T>(directory: string, task: () => Promise<T>): Promise<T> {
  const previous = tails.get(directory) ?? Promise.resolve();
  const run = previous.then(task);
  const tail = run.then(
    () => undefined,
    () => undefined,
  );
  tails.set(directory, tail);
  void tail.then(() => {
    if (tails.get(directory) === tail) tails.delete(directory);
  });
  return run;
}
