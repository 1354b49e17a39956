import { Caller, FULL_ACCESS, heldOf, tapGrant } from '@tapyard/auth';
import { TapConfig } from './tap.types';

/** Who is asking, for the checks a tap needs beyond the route's capability; null: authentication is off. */
export type TapCaller = Caller;

/** A tap saved before grants existed, or by an anonymous caller, acts without limit (as everyone did). */
export const UNLIMITED = tapGrant([FULL_ACCESS]);

/** Whether a change alters the code that runs or what it runs with: script, packages, secret. */
export function changesCode(current: TapConfig | null, next: TapConfig, newScript: boolean): boolean {
  if (!current || newScript) return true;
  return (
    current.scriptPath !== next.scriptPath ||
    current.secretName !== next.secretName ||
    current.packages.join('\n') !== next.packages.join('\n')
  );
}

/**
 * The grant a save leaves on the tap. Whoever changes its code vouches for it with their own
 * capabilities; any other change can only narrow the grant, so editing someone else's tap never lends
 * it the editor's wider rights (and a narrower editor cannot keep the wider ones).
 */
export function nextGrant(
  current: { grant: string[] | null } | null,
  codeChanged: boolean,
  caller: TapCaller | null,
): string[] {
  if (!caller) return UNLIMITED;
  if (codeChanged || !current) return tapGrant(caller.capabilities);
  return heldOf(current.grant ?? UNLIMITED, caller.ability);
}
