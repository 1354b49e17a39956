import { closestChoice, didYouMean } from './did-you-mean';

describe('closestChoice', () => {
  const sections = ['database', 'objectStore', 'vectorStore', 'rest', 'kafka'];

  it('finds a near miss: another case, a typo, a swap of neighbours', () => {
    expect(closestChoice('objectstore', sections)).toBe('objectStore');
    expect(closestChoice('databse', sections)).toBe('database');
    expect(closestChoice('kafak', sections)).toBe('kafka');
    expect(closestChoice('vectorStores', sections)).toBe('vectorStore');
  });

  it('guesses nothing for a word that is not close to any choice', () => {
    expect(closestChoice('warehouse', sections)).toBeNull();
    expect(closestChoice('c', ['a', 'b'])).toBeNull();
    expect(closestChoice('x'.repeat(10000), sections)).toBeNull();
    expect(didYouMean('warehouse', sections)).toBe('');
    expect(didYouMean('Rest', sections)).toBe(" (did you mean 'rest'?)");
  });
});
