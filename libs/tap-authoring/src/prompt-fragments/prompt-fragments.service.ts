import { Injectable } from '@nestjs/common';
import { NotFoundError, ValidationError } from '@tapyard/core';
import {
  MAX_FRAGMENT_ALIASES,
  MAX_FRAGMENT_CONTENT,
  MAX_FRAGMENT_KEY,
  PromptFragment,
  fragmentMatcher,
} from './prompt-fragment';
import { PromptFragmentsRepository } from './prompt-fragments.repository';

interface Cached {
  generation: string;
  fragments: { fragment: PromptFragment; matcher: RegExp }[];
}

/**
 * Prompt fragments with an in-process cache per environment. Each use compares the environment's
 * generation (one indexed read) with the cached one, so a write on any API instance is seen by the
 * next request on every other; a write here drops the local copy at once.
 */
@Injectable()
export class PromptFragmentsService {
  private readonly cache = new Map<string, Cached>();

  constructor(private readonly repo: PromptFragmentsRepository) {}

  async list(environment: string): Promise<PromptFragment[]> {
    return (await this.current(environment)).fragments.map((f) => f.fragment);
  }

  async get(environment: string, key: string): Promise<PromptFragment> {
    const found = await this.repo.find(environment, key);
    if (!found) throw new NotFoundError(`prompt fragment '${key.slice(0, MAX_FRAGMENT_KEY)}' does not exist`);
    return found;
  }

  async put(environment: string, key: string, aliases: string[], content: string): Promise<void> {
    const k = checkKey(key);
    const clean = [...new Set(aliases.map((a) => a.trim()).filter((a) => a.length > 0))];
    if (clean.length > MAX_FRAGMENT_ALIASES) {
      throw new ValidationError(`a fragment has at most ${MAX_FRAGMENT_ALIASES} aliases`, [
        { field: 'aliases', problem: `more than ${MAX_FRAGMENT_ALIASES}` },
      ]);
    }
    for (const a of clean) {
      if (a.length > MAX_FRAGMENT_KEY || /\p{Cc}/u.test(a)) {
        throw new ValidationError(
          `alias '${a.slice(0, 40)}' is longer than ${MAX_FRAGMENT_KEY} characters or has control characters`,
          [{ field: 'aliases', problem: 'too long or has control characters' }],
        );
      }
    }
    if (!content.trim()) {
      throw new ValidationError('a fragment needs content', [{ field: 'content', problem: 'is empty' }]);
    }
    if (content.length > MAX_FRAGMENT_CONTENT) {
      throw new ValidationError(`content is longer than ${MAX_FRAGMENT_CONTENT} characters`, [
        { field: 'content', problem: `longer than ${MAX_FRAGMENT_CONTENT} characters` },
      ]);
    }
    await this.repo.put(environment, k, clean, content);
    this.cache.delete(environment);
  }

  async delete(environment: string, key: string): Promise<void> {
    const deleted = await this.repo.delete(environment, key);
    this.cache.delete(environment);
    if (!deleted)
      throw new NotFoundError(`prompt fragment '${key.slice(0, MAX_FRAGMENT_KEY)}' does not exist`);
  }

  /** Fragments whose key or an alias occurs as a whole word in any of the texts. */
  async matching(environment: string, texts: readonly string[]): Promise<PromptFragment[]> {
    const { fragments } = await this.current(environment);
    return fragments.filter((f) => texts.some((t) => f.matcher.test(t))).map((f) => f.fragment);
  }

  private async current(environment: string): Promise<Cached> {
    const generation = await this.repo.generation(environment);
    const known = this.cache.get(environment);
    if (known && known.generation === generation) return known;
    const fragments = (await this.repo.list(environment)).map((fragment) => ({
      fragment,
      matcher: fragmentMatcher(fragment),
    }));
    const fresh = { generation, fragments };
    this.cache.set(environment, fresh);
    return fresh;
  }
}

function checkKey(key: string): string {
  const k = key.trim();
  if (!k || k.length > MAX_FRAGMENT_KEY || /\p{Cc}/u.test(k) || k.includes('/')) {
    throw new ValidationError(
      `fragment key must be 1 to ${MAX_FRAGMENT_KEY} characters without '/' or control characters`,
      [{ field: 'key', problem: 'empty, too long, or has / or control characters' }],
    );
  }
  return k;
}
