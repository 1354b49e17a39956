/**
 * Polls `holds` until it is true. The bound is a failure, not a schedule: the wait ends as soon as the
 * condition holds, and a wait in vain fails naming what it waited for.
 */
export async function until(
  what: string,
  holds: () => boolean | Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await holds()) return;
    if (Date.now() > deadline) throw new Error(`still waiting for ${what} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
