import { type FormEvent, type ReactNode, useEffect, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { Problem, Refused } from '../components';
import {
  type FilterRow,
  STORES,
  type Store,
  containerField,
  filterOf,
  searchBody,
} from '../logic/search-form';
import { useRefusal } from '../session';
import { Upload } from './Pipelines';
import '../data.css';

type Pipeline = Schemas['PipelineListItemDto'];
type Hit = Schemas['SearchResultDto'];

/** A document pipeline loads into a vector store: its destinations name the store (docs/documents.md). */
function storeOf(p: Pipeline): string | undefined {
  return p.destinations.find((d) => (STORES as readonly string[]).includes(d));
}

export function Documents(): ReactNode {
  const [pipelines, setPipelines] = useState<Pipeline[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [chosen, setChosen] = useState<string>('');
  const [target, setTarget] = useState<{ store: string; container: string } | null>(null);

  useEffect(() => {
    void api.GET('/api/v1/pipelines').then(({ data, error, response }) => {
      if (!data) return setProblem(problemOf(error, response));
      const docs = data.filter((p) => storeOf(p) !== undefined);
      setPipelines(docs);
      if (docs.length > 0) setChosen(docs[0].name);
    });
  }, []);

  // The search playground starts on the chosen pipeline's own store and collection.
  useEffect(() => {
    if (!chosen) return;
    void api
      .GET('/api/v1/pipeline', { params: { query: { pipeline: chosen } } })
      .then(({ data, error, response }) => {
        if (!data) return setProblem(problemOf(error, response));
        const vs = (data.destination as { vectorStore?: { store: string; collection: string } }).vectorStore;
        if (vs) setTarget({ store: vs.store, container: vs.collection });
      });
  }, [chosen]);

  return (
    <>
      <Problem text={problem} />
      <section aria-labelledby="docs-title" className="panel">
        <h2 id="docs-title">Document pipelines</h2>
        {pipelines && pipelines.length === 0 && (
          <p>
            No pipeline loads into a vector store yet: register one with a <code>vectorStore</code>{' '}
            destination (see the documents guide).
          </p>
        )}
        {pipelines && pipelines.length > 0 && (
          <label>
            Pipeline
            <select value={chosen} onChange={(e) => setChosen(e.target.value)}>
              {pipelines.map((p) => (
                <option key={p.name} value={p.name}>
                  {p.name} ({storeOf(p)})
                </option>
              ))}
            </select>
          </label>
        )}
      </section>
      {chosen && <DocumentUpload key={chosen} pipeline={chosen} />}
      <SearchPlayground key={target ? `${target.store}/${target.container}` : 'none'} initial={target} />
    </>
  );
}

function DocumentUpload({ pipeline }: { pipeline: string }): ReactNode {
  const refused = useRefusal('document:upload');
  if (refused) {
    return (
      <section className="panel" aria-label={`Load a document into ${pipeline}`}>
        <Refused reason={refused} />
      </section>
    );
  }
  return <Upload pipeline={pipeline} />;
}

function SearchPlayground({ initial }: { initial: { store: string; container: string } | null }): ReactNode {
  const refused = useRefusal('search:vector');
  const [store, setStore] = useState<Store>(
    (STORES as readonly string[]).includes(initial?.store ?? '') ? (initial?.store as Store) : 'pgvector',
  );
  const [container, setContainer] = useState(initial?.container ?? '');
  const [schema, setSchema] = useState('');
  const [query, setQuery] = useState('');
  const [topK, setTopK] = useState(5);
  const [filters, setFilters] = useState<FilterRow[]>([{ key: '', value: '' }]);
  const [problem, setProblem] = useState<string | null>(null);
  const [hits, setHits] = useState<Hit[] | null>(null);
  const [busy, setBusy] = useState(false);
  const field = containerField(store);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setProblem(null);
    const { filter, problem: bad } = filterOf(filters);
    if (bad) return setProblem(bad);
    setBusy(true);
    const { data, error, response } = await api.POST('/api/v1/search/{store}', {
      params: { path: { store } },
      // The container field is the store's own (table, className or collection): the DTO types only a union.
      body: searchBody(store, container, schema, query, topK, filter) as Schemas['SearchRequestDto'],
    });
    setBusy(false);
    if (!data) {
      setHits(null);
      return setProblem(problemOf(error, response));
    }
    setHits(data.results);
  };

  const setFilter = (i: number, row: Partial<FilterRow>): void =>
    setFilters((rows) => rows.map((r, j) => (j === i ? { ...r, ...row } : r)));

  return (
    <section aria-labelledby="search-title" className="panel">
      <h2 id="search-title">Search</h2>
      <Refused reason={refused} />
      <form onSubmit={submit} className="search-form">
        <div className="row">
          <label>
            Store
            <select value={store} onChange={(e) => setStore(e.target.value as Store)}>
              {STORES.map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>
          </label>
          <label>
            {field.label}
            <input value={container} onChange={(e) => setContainer(e.target.value)} required />
          </label>
          {store === 'pgvector' && (
            <label>
              Schema
              <input value={schema} onChange={(e) => setSchema(e.target.value)} placeholder="public" />
            </label>
          )}
          <label>
            Results
            <input
              type="number"
              min={1}
              max={100}
              value={topK}
              onChange={(e) => setTopK(Number(e.target.value))}
            />
          </label>
        </div>
        <label className="wide">
          Question
          <input value={query} onChange={(e) => setQuery(e.target.value)} required />
        </label>
        <fieldset>
          <legend>Metadata filters (all must hold; a JSON list means any of)</legend>
          {filters.map((f, i) => (
            <div className="row" key={i}>
              <label>
                Filter key {i + 1}
                <input value={f.key} onChange={(e) => setFilter(i, { key: e.target.value })} />
              </label>
              <label>
                Filter value {i + 1}
                <input value={f.value} onChange={(e) => setFilter(i, { value: e.target.value })} />
              </label>
            </div>
          ))}
          <button type="button" onClick={() => setFilters((rows) => [...rows, { key: '', value: '' }])}>
            Add a filter
          </button>
        </fieldset>
        <button type="submit" disabled={refused !== null || busy}>
          Search
        </button>
      </form>
      <Problem text={problem} />
      {hits && hits.length === 0 && <p>Nothing matches.</p>}
      {hits && hits.length > 0 && (
        <ol className="hits" aria-label="Search results">
          {hits.map((h) => (
            <li key={h.id}>
              <p>
                <strong data-testid="score">score {h._score.toFixed(3)}</strong> <span>{h.text}</span>
              </p>
              <dl className="metadata">
                {Object.entries(h.metadata).map(([k, v]) => (
                  <div key={k}>
                    <dt>{k}</dt>
                    <dd>{typeof v === 'string' ? v : JSON.stringify(v)}</dd>
                  </div>
                ))}
              </dl>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
