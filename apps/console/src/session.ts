import { createContext, useContext } from 'react';
import type { Schemas } from './api/client';
import { refusal } from './logic/capabilities';

/** Who is signed in (`GET /auth/me`), shared by every page to decide what to offer. */
export interface Signed {
  me: Schemas['MeDto'];
}

export const SessionContext = createContext<Signed | null>(null);

/** Null when the caller may try `capability`; otherwise why not, for the disabled control. */
export function useRefusal(capability: string): string | null {
  const session = useContext(SessionContext);
  if (!session) return 'Not signed in.';
  const { me } = session;
  const who =
    me.kind === 'session'
      ? `Your role (${me.role ?? 'unknown'})`
      : me.kind === 'key'
        ? `The key ${me.identity}`
        : 'This caller';
  return refusal(me.capabilities, capability, who);
}
