import { dqPassRate } from './run-profile';

describe('dqPassRate', () => {
  it('is the passing share of sampled rows', () => {
    expect(dqPassRate(100, 5)).toBe(0.95);
    expect(dqPassRate(4, 0)).toBe(1);
  });

  it('is 1 when nothing was sampled', () => {
    expect(dqPassRate(0, 0)).toBe(1);
  });

  it('does not go below 0 when failures outnumber rows', () => {
    expect(dqPassRate(10, 25)).toBe(0);
  });
});
