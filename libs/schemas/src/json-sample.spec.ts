import { findRecordPath } from './json-sample';

describe('findRecordPath', () => {
  it('finds the array of records one or two keys under a wrapping object', () => {
    expect(findRecordPath('{"data": {"items": [{"id": 1}, {"id": 2}]}, "meta": {"page": 1}}')).toBe(
      'data.items',
    );
    expect(findRecordPath('{"results": [{"a": 1}], "count": 1}')).toBe('results');
    // The largest array of objects wins over a smaller one seen first.
    expect(
      findRecordPath(
        '{"links": [{"rel": "next"}], "rows": [{"a": 1}, {"a": 2}, {"a": 3}], "tags": ["x", "y"]}',
      ),
    ).toBe('rows');
    // Escaped quotes and brackets inside strings are text, not structure.
    expect(findRecordPath('{"note": "a \\"[{\\" b", "list": [{"s": "]}"}, {"s": "{"}]}')).toBe('list');
  });

  it('reads a cut-off head: the open array counts with what was seen', () => {
    expect(findRecordPath('{"data": {"items": [{"id": 1}, {"id": 2}, {"id"')).toBe('data.items');
  });

  it('gives null when the records are already at the top, or there is no record array', () => {
    expect(findRecordPath('[{"a": 1}, {"a": 2}]')).toBeNull();
    expect(findRecordPath('{"a": [{"x": 1}]}\n{"a": [{"x": 2}]}\n')).toBeNull();
    expect(findRecordPath('{"id": 1, "tags": ["a", "b"]}')).toBeNull();
    expect(findRecordPath('{"mixed": [{"a": 1}, 2]}')).toBeNull();
    expect(findRecordPath('{"a": {"b": {"c": {"d": [{"x": 1}]}}}}')).toBeNull();
    expect(findRecordPath('{"a.b": [{"x": 1}]}')).toBeNull();
    expect(findRecordPath('')).toBeNull();
  });

  // Audit finding 1: each level used to copy its parent's key path, so 8,000 levels took a second of
  // CPU and 370 MiB, and the 8 MiB sample generate reads could exhaust the API's heap. One pass now
  // takes a few milliseconds at 10,000 levels; the bound leaves room for a loaded machine.
  it('reads a sample nested 10,000 levels deep in one pass, in well under 250 ms of CPU', () => {
    const depth = 10_000;
    const cutOff = '{"a":'.repeat(depth);
    const closed = `{"rows": [{"id": 1}, {"id": 2}], "deep": ${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;
    const started = process.cpuUsage();
    expect(findRecordPath(cutOff)).toBeNull();
    expect(findRecordPath(closed)).toBe('rows');
    const used = process.cpuUsage(started);
    expect((used.user + used.system) / 1000).toBeLessThan(250);
  });

  it('still finds the records in an array three keys down, and not in one inside an array', () => {
    expect(findRecordPath('{"a": {"b": {"c": [{"x": 1}, {"x": 2}]}}}')).toBe('a.b.c');
    expect(findRecordPath('{"a": [{"b": [{"x": 1}, {"x": 2}, {"x": 3}]}]}')).toBe('a');
    expect(findRecordPath('{"a": [[{"x": 1}], [{"x": 2}]]}')).toBeNull();
  });
});
