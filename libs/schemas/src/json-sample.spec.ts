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
});
