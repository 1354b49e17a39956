import { RunningScript, WarmScript, warmKey, type ScriptRunSpec, type WarmSpec } from '@tapyard/scripts';

/** At most this many idle warm sandboxes per stage thread (each holds a uid and cgroups). */
export const MAX_SPARES = 4;

/**
 * A stage thread's warm sandboxes, by warmKey: one for each kind of script the thread ran, started after
 * the job that used the last one. A job takes it instead of starting its script's sandbox; each is taken
 * once, so no job sees what another's script left.
 */
export class WarmScripts {
  private readonly spares = new Map<string, WarmScript>();
  /** The pool let go of this thread: no more warm sandboxes. */
  private retired = false;

  /** The script in a warm sandbox when one is ready, else in one started now. */
  async take(spec: ScriptRunSpec): Promise<RunningScript> {
    const key = warmKey(spec);
    const spare = this.spares.get(key);
    this.spares.delete(key);
    return (await spare?.take(spec)) ?? RunningScript.start(spec);
  }

  /**
   * After a job: a warm sandbox for each kind of script it ran, for this thread's next job (or for the
   * kinds the pool hands over from a thread it let go).
   */
  replenish(specs: WarmSpec[]): void {
    if (this.retired) return;
    for (const spec of specs) {
      const key = warmKey(spec);
      if (this.spares.has(key)) continue;
      const oldest = this.spares.keys().next();
      if (this.spares.size >= MAX_SPARES && oldest.done !== true) {
        this.spares.get(oldest.value)?.kill();
        this.spares.delete(oldest.value);
      }
      this.spares.set(key, WarmScript.start(spec));
    }
  }

  /** Stops every warm sandbox and starts no more; settles once their uids and cgroups are given back. */
  async retire(): Promise<void> {
    this.retired = true;
    const stopping = [...this.spares.values()].map((spare) => spare.stop());
    this.spares.clear();
    await Promise.all(stopping);
  }
}
