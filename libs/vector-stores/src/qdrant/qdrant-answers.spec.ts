import { qdrantDimensionError, qdrantVectorSize } from './qdrant-answers';

describe('qdrantDimensionError', () => {
  it("reads Qdrant's dimension complaint, and nothing else", () => {
    expect(qdrantDimensionError('Wrong input: Vector dimension error: expected dim: 4, got 3')).toEqual({
      expected: 4,
      actual: 3,
    });
    expect(qdrantDimensionError("Not found: Collection `x` doesn't exist!")).toBeNull();
  });
});

describe('qdrantVectorSize', () => {
  it('is the size of the unnamed vector, undefined for named vectors', () => {
    expect(qdrantVectorSize({ size: 384, distance: 'Cosine' })).toBe(384);
    expect(qdrantVectorSize({ a: { size: 4, distance: 'Euclid' } })).toBeUndefined();
    expect(qdrantVectorSize(undefined)).toBeUndefined();
  });
});
