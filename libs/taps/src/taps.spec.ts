import { ColumnNamer, RecordShapeError, SampleSink, asDocument, asRow } from './record-sinks';
import { documentViolation, isScriptOf } from './taps.service';
import { PipelineDefinition } from '@tapyard/model';

describe('ColumnNamer', () => {
  it('normalises keys like CSV headers, in order of first appearance, keeping distinct keys distinct', () => {
    const n = new ColumnNamer();
    expect(n.normalise({ 'Order ID': 1, 'growth%': 2 })).toEqual({ order_id: 1, growth_percent: 2 });
    n.observe({ ORDER_ID: 3, 'Order ID': 4, ü: 5 });
    expect(n.keys).toEqual(['Order ID', 'growth%', 'ORDER_ID', 'ü']);
    expect(n.columns).toEqual(['order_id', 'growth_percent', 'order_id_2', 'column_4']);
  });
});

describe('record shapes', () => {
  it('takes objects as rows and names what else it got', () => {
    expect(asRow({ a: 1 }, 0)).toEqual({ a: 1 });
    expect(() => asRow([1], 4)).toThrow(
      new RecordShapeError('record 4 is an array; a structured tap yields objects (dicts), one per row'),
    );
    expect(() => asRow(null, 0)).toThrow(/record 0 is null/);
    expect(() => asRow('x', 1)).toThrow(/record 1 is a string/);
  });

  it('checks documents and adds the content hash and metadata', () => {
    const d = asDocument({ uri: 'u', filename: 'f.txt', content: 'aGk=', metadata: { lang: 'en' } }, 0);
    expect(d.content_hash).toBe('96e3186af2815065fbc894de1bdadda7830527fffdba6bdd709789cf0ee79a6a');
    expect(d.metadata).toEqual({ lang: 'en', sizeBytes: 4 });
    expect(() => asDocument({ uri: 'u', content: '' }, 2)).toThrow(
      /document record 2 needs a string 'filename'/,
    );
    expect(() => asDocument({ uri: '', filename: 'f', content: '' }, 0)).toThrow(/'uri'/);
  });

  it('samples 20 records and counts the rest', () => {
    const s = new SampleSink('csv');
    const rows = Array.from({ length: 25 }, (_, i) => ({ 'A B': i, ...(i === 22 ? { late: true } : {}) }));
    const chunk = (records: unknown[]) => ({ records, text: '', count: records.length, keys: [] });
    s.add(chunk(rows.slice(0, 10)), 0);
    s.add(chunk(rows.slice(10)), 10);
    expect(s.records).toHaveLength(20);
    expect(s.count).toBe(25);
    expect(s.columns).toEqual(['a_b', 'late']);
    expect(new SampleSink('document').columns).toBeNull();
  });
});

describe('script keys', () => {
  it("tells a tap's script versions from a tap whose name extends it", () => {
    expect(isScriptOf('a', 'tap-scripts/a_20261122T101530123-3f9a1c.py')).toBe(true);
    expect(isScriptOf('a', 'tap-scripts/a_b_20261122T101530123-3f9a1c.py')).toBe(false);
    expect(isScriptOf('a_b', 'tap-scripts/a_b_20261122T101530123-3f9a1c.py')).toBe(true);
    expect(isScriptOf('a', 'tap-scripts/a_x/../../etc.py')).toBe(false);
    expect(isScriptOf('a', 'other/a_1.py')).toBe(false);
  });
});

describe('document-tap compatibility (spec rule 1)', () => {
  const def = (unstructured: object | null, vector: boolean) =>
    ({
      source: { fileAttributes: { unstructuredAttributes: unstructured } },
      destination: vector ? { vectorStore: { store: 'chroma', collection: 'c' } } : { database: {} },
    }) as unknown as PipelineDefinition;

  it('names each violation', () => {
    expect(documentViolation('p', def({}, true))).toBeNull();
    expect(documentViolation('p', null)).toMatch(/'p' does not exist/);
    expect(documentViolation('p', def(null, true))).toBe(
      "pipeline 'p' cannot take a document tap: source.fileAttributes.unstructuredAttributes is null",
    );
    expect(documentViolation('p', def({}, false))).toMatch(/no vector-store destination/);
    expect(documentViolation('p', def(null, false))).toMatch(/is null and it has no vector-store/);
  });
});
