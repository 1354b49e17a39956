import { chromaWhere } from './chroma-filter';

describe('chromaWhere', () => {
  it('is absent without conditions, a lone condition alone, several under $and', () => {
    expect(chromaWhere(undefined)).toBeUndefined();
    expect(chromaWhere({ colour: 'red' })).toEqual({ colour: { $eq: 'red' } });
    expect(chromaWhere({ colour: ['red', 'green'], year: 2025, public: false })).toEqual({
      $and: [{ colour: { $in: ['red', 'green'] } }, { year: { $eq: 2025 } }, { public: { $eq: false } }],
    });
  });
});
