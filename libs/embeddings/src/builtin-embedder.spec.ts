import { availableParallelism, homedir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
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

  it('hands each model thread its next run before the answer to the run before arrives, with the same vectors', async () => {
    const e = await builtinEmbedder(DIR);
    const texts = Array.from(
      { length: 96 },
      (_, i) => `sentence number ${i} about ${i % 7 ? 'cats' : 'stocks'}`,
    );
    const one = await Promise.all(texts.slice(0, 8).map(async (t) => (await e.embed([t]))[0]));
    // Runs posted to the model thread by the time each answer comes back.
    const posted = jest.spyOn(Worker.prototype, 'postMessage');
    const emit = Worker.prototype.emit;
    const postedAtAnswer: number[] = [];
    const answers = jest.spyOn(Worker.prototype, 'emit').mockImplementation(function (
      this: Worker,
      event: string | symbol,
      ...args: unknown[]
    ) {
      if (event === 'message') postedAtAnswer.push(posted.mock.calls.length);
      return emit.call(this, event, ...args);
    });
    try {
      const vectors = await e.embed(texts);
      // Twelve runs of 8 over two sessions (one on a one-core machine), two runs handed to each at a
      // time: every answer finds the next run already posted, until the last runs are out.
      const sessions = new Set(posted.mock.contexts).size;
      expect(sessions).toBe(Math.min(2, availableParallelism()));
      const runs = texts.length / 8;
      expect(postedAtAnswer).toEqual(
        Array.from({ length: runs }, (_, k) => Math.min(runs, 2 * sessions + k)),
      );
      for (let i = 0; i < one.length; i++) expect(cosine(vectors[i], one[i])).toBeGreaterThan(0.9999);
    } finally {
      answers.mockRestore();
      posted.mockRestore();
    }
  });

  it('names the fix when the model files are missing', async () => {
    await expect(builtinEmbedder('/nonexistent/model')).rejects.toThrow(/scripts\/services up models/);
  });
});
