import { homedir } from 'node:os';
import { join } from 'node:path';
import { builtinEmbedder } from './builtin-embedder';
import { cosine } from './vectors';

const DIR =
  process.env.EMBEDDING_MODEL_DIR ??
  join(process.env.TAPYARD_HOME ?? join(homedir(), '.cache', 'tapyard'), 'models', 'all-MiniLM-L6-v2');

describe('built-in embedder (all-MiniLM-L6-v2 int8, real model files)', () => {
  it('embeds to unit vectors of 384 dimensions, similar sentences close and unrelated ones far', async () => {
    const e = await builtinEmbedder(DIR).catch((err: Error) => {
      throw new Error(`${err.message} (run \`scripts/services up models\`)`);
    });
    expect(e.dimension).toBe(384);
    const [cat, kitten, stocks] = await e.embed([
      'A cat sits on the mat',
      'A kitten rests on a rug',
      'Stock markets fell sharply today',
    ]);
    for (const v of [cat, kitten, stocks]) {
      expect(v).toHaveLength(384);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    }
    expect(cosine(cat, kitten)).toBeGreaterThan(0.5);
    expect(cosine(cat, stocks)).toBeLessThan(0.2);
  });

  it('gives a text the same vector alone or in a padded batch, and cuts long inputs to the model length', async () => {
    const e = await builtinEmbedder(DIR);
    const [alone] = await e.embed(['short text']);
    const batch = await e.embed([
      'a much longer sentence that makes the batch pad the short one',
      'short text',
    ]);
    expect(cosine(alone, batch[1])).toBeGreaterThan(0.9999);
    const long = 'word '.repeat(5000);
    const [v] = await e.embed([long]);
    expect(v).toHaveLength(384);
    expect(e.tokenizer.count('Unbelievably, a cat!')).toBe(9);
  });

  it('names the fix when the model files are missing', async () => {
    await expect(builtinEmbedder('/nonexistent/model')).rejects.toThrow(/scripts\/services up models/);
  });
});
