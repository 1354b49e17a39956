import { useCallback, useEffect, useState } from 'react';
import { problemOf } from './api/client';

/** What a typed client call answers (openapi-fetch's `{data, error, response}`). */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * A list (or any value) a page reads from the API: loaded when `refused` is null, again on `reload()`
 * (after a write); a failed read becomes the problem sentence shown on the page, never a crash.
 */
export function useLoaded<T>(
  read: () => Promise<Answer<T>>,
  refused: string | null = null,
): { data: T | null; problem: string | null; reload: () => Promise<void> } {
  const [data, setData] = useState<T | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const reload = useCallback(async () => {
    const { data: value, error, response } = await read();
    if (value !== undefined) {
      setData(value);
      setProblem(null);
    } else setProblem(problemOf(error, response));
    // Read once per mount: `read` is a fresh closure on each render, and the page calls reload() after a write.
  }, []);
  useEffect(() => {
    if (!refused) void reload();
  }, [reload, refused]);
  return { data, problem, reload };
}
