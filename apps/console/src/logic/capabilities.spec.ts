import { holds, refusal } from './capabilities';

describe('holds', () => {
  it('matches resource and action exactly or by wildcard, whatever the scope', () => {
    expect(holds(['*:*'], 'key:create')).toBe(true);
    expect(holds(['key:*'], 'key:delete')).toBe(true);
    expect(holds(['*:read'], 'key:read')).toBe(true);
    expect(holds(['pipeline:upload:catalog=sales'], 'pipeline:upload')).toBe(true);
    expect(holds(['pipeline:read', 'job:read'], 'pipeline:upload')).toBe(false);
    expect(holds(['key:read'], 'key:create')).toBe(false);
    expect(holds([], 'job:read')).toBe(false);
  });
});

describe('refusal', () => {
  it('names who lacks which capability, and is null when held', () => {
    expect(refusal(['pipeline:read'], 'key:read', 'Your role (viewer)')).toBe(
      'Your role (viewer) lacks the capability key:read.',
    );
    expect(refusal(['*:*'], 'key:read', 'x')).toBeNull();
  });
});
