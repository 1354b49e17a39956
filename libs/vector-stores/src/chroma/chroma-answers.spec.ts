import { chromaDimensionError, chromaSimilarity } from './chroma-answers';

describe('chromaSimilarity', () => {
  // Distances Chroma 1.5.9 reported for [1,0] against [1,0], [√½,√½] and [-1,0].
  it.each([
    ['cosine', [0, 0.29289323, 2]],
    ['ip', [0, 0.29289323, 2]],
    ['l2', [0, 0.5857864, 4]],
  ] as const)('turns %s distances into cosine similarity', (space, distances) => {
    const sims = distances.map((d) => chromaSimilarity(space, d));
    expect(sims[0]).toBeCloseTo(1, 6);
    expect(sims[1]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(sims[2]).toBeCloseTo(-1, 6);
  });

  it('stays in [-1, 1] when rounding strays past it', () => {
    expect(chromaSimilarity('cosine', -1e-7)).toBe(1);
    expect(chromaSimilarity('l2', 4.0000002)).toBe(-1);
  });
});

describe('chromaDimensionError', () => {
  it("reads Chroma's dimension complaint, and nothing else", () => {
    expect(
      chromaDimensionError(
        'Bad request to http://127.0.0.1:8000/api/v2/…/upsert with status: Collection expecting embedding with dimension of 4, got 3',
      ),
    ).toEqual({ expected: 4, actual: 3 });
    expect(
      chromaDimensionError('Bad request with status: Expected where to have exactly one operator'),
    ).toBeNull();
  });
});
