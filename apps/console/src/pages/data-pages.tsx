import { type ReactNode, Suspense, lazy } from 'react';

/**
 * The data pages, each its own chunk loaded when first opened: the charts (chart.js) and the pages'
 * code stay out of the first page's bundle.
 */
const pages = {
  documents: lazy(() => import('./Documents').then((m) => ({ default: m.Documents }))),
  query: lazy(() => import('./Query').then((m) => ({ default: m.Query }))),
  assistant: lazy(() => import('./Assistant').then((m) => ({ default: m.Assistant }))),
  incidents: lazy(() => import('./Incidents').then((m) => ({ default: m.Incidents }))),
};

export function DataPage({ name }: { name: keyof typeof pages }): ReactNode {
  const Page = pages[name];
  return (
    <Suspense fallback={<p>Loading…</p>}>
      <Page />
    </Suspense>
  );
}
