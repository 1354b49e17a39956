import { chunkId, tapMetadata } from './chunk-identity';

describe('chunkId', () => {
  it('is a stable RFC 4122 version-8 UUID of uri, index and text', () => {
    const id = chunkId('s3://b/a.pdf', 0, 'hello');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(chunkId('s3://b/a.pdf', 0, 'hello')).toBe(id);
    expect(
      new Set([
        id,
        chunkId('s3://b/a.pdf', 1, 'hello'),
        chunkId('s3://b/b.pdf', 0, 'hello'),
        chunkId('s3://b/a.pdf', 0, 'hello!'),
      ]).size,
    ).toBe(4);
  });

  it('does not confuse fields across the separator', () => {
    expect(chunkId('a', 11, 'x')).not.toBe(chunkId('a1', 1, 'x'));
  });
});

describe('tapMetadata', () => {
  it('keeps filterable scalar keys, writes objects as JSON, never overrides platform keys', () => {
    expect(
      tapMetadata(
        {
          author: 'Ann',
          year: 2024,
          draft: false,
          tags: ['a', 'b'],
          uri: 'forged',
          'bad key': 1,
          n: NaN,
          z: null,
        },
        null,
      ),
    ).toEqual({ author: 'Ann', year: 2024, draft: false, tags: '["a","b"]' });
  });

  it('keeps only the chosen keys when told', () => {
    expect(tapMetadata({ author: 'Ann', year: 2024 }, ['year'])).toEqual({ year: 2024 });
    expect(tapMetadata('not an object', null)).toEqual({});
  });
});
