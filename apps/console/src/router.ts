import { useEffect, useState } from 'react';

/** The console's pages are plain paths (the API sends its page for them), moved between with history. */
export function usePath(): string {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const update = (): void => setPath(window.location.pathname);
    window.addEventListener('popstate', update);
    return () => window.removeEventListener('popstate', update);
  }, []);
  return path;
}

/** `path` may carry a query (`/taps?tap=orders`): a page's own parameters, read with `useQuery`. */
export function navigate(path: string): void {
  if (path === window.location.pathname + window.location.search) return;
  window.history.pushState(null, '', path);
  window.dispatchEvent(new PopStateEvent('popstate'));
}

const queryValue = (name: string): string | null => new URLSearchParams(window.location.search).get(name);

/** One query parameter of the current address, following history like `usePath`. */
export function useQuery(name: string): string | null {
  const [value, setValue] = useState(() => queryValue(name));
  useEffect(() => {
    const update = (): void => setValue(queryValue(name));
    window.addEventListener('popstate', update);
    return () => window.removeEventListener('popstate', update);
  }, [name]);
  return value;
}
