import { isUnreachable, unreachableReason } from './vetted-url';

const fetchFailed = (cause?: unknown): Error => Object.assign(new TypeError('fetch failed'), { cause });

describe('unreachableReason', () => {
  it('names the connection error, also under fetch failed', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6333'), { code: 'ECONNREFUSED' });
    expect(unreachableReason(refused)).toBe('ECONNREFUSED');
    expect(unreachableReason(fetchFailed(refused))).toBe('ECONNREFUSED');
    expect(unreachableReason(fetchFailed(new Error('bad port')))).toBe('bad port');
    expect(unreachableReason(fetchFailed())).toBe('fetch failed');
    expect(unreachableReason(Object.assign(new Error('x'), { name: 'TimeoutError' }))).toBe('TimeoutError');
  });

  it('is undefined for answers of a server that was reached', () => {
    const answered = Object.assign(new Error('Bad Request'), { status: 400 });
    expect(unreachableReason(answered)).toBeUndefined();
    expect(isUnreachable(answered)).toBe(false);
    expect(isUnreachable(fetchFailed())).toBe(true);
  });
});
