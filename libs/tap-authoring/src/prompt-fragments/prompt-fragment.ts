/** Addendum: a tap prompt fragment. */
export interface PromptFragment {
  key: string;
  aliases: string[];
  content: string;
  createdAt: string;
  updatedAt: string;
}

export const MAX_FRAGMENT_KEY = 100;
export const MAX_FRAGMENT_ALIASES = 20;
export const MAX_FRAGMENT_CONTENT = 20_000;

/**
 * A matcher for the fragment's key and aliases: case-insensitive, whole words only (no letter, digit
 * or `_` on either side), so `api` matches "the API key" but not "rapid".
 */
export function fragmentMatcher(f: Pick<PromptFragment, 'key' | 'aliases'>): RegExp {
  const terms = [f.key, ...f.aliases]
    .map((t) => t.trim())
    .filter((t) => t.length > 0)
    .sort((a, b) => b.length - a.length)
    .map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\s+/g, '\\s+'));
  return new RegExp(`(?<![\\p{L}\\p{N}_])(?:${terms.join('|')})(?![\\p{L}\\p{N}_])`, 'iu');
}
