import { qdrantFilter } from './qdrant-filter';

describe('qdrantFilter', () => {
  it('is absent without conditions', () => {
    expect(qdrantFilter(undefined)).toBeUndefined();
    expect(qdrantFilter({})).toBeUndefined();
  });

  it('matches under metadata, lists as any-of, floats as a closed range', () => {
    expect(qdrantFilter({ colour: ['red', 'green'], year: 2025, public: false, ratio: 0.5 })).toEqual({
      must: [
        {
          should: [
            { key: 'metadata.colour', match: { value: 'red' } },
            { key: 'metadata.colour', match: { value: 'green' } },
          ],
        },
        { key: 'metadata.year', match: { value: 2025 } },
        { key: 'metadata.public', match: { value: false } },
        { key: 'metadata.ratio', range: { gte: 0.5, lte: 0.5 } },
      ],
    });
  });
});
