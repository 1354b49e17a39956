import { createHash } from 'node:crypto';
import { AddressInfo } from 'node:net';
import { Server, createServer } from 'node:http';
import { EgressPolicy } from '@tapyard/egress';
import { openAiCompatibleEmbedder } from './openai-embedder';

const measure = { tokenizer: { count: (t: string) => t.split(/\s+/).filter(Boolean).length } };
const KEY = 'sk-test-secret-value-1234';

/** A loopback server speaking OpenAI's `POST /v1/embeddings`, scripted per request. */
function provider(script: (n: number) => { status: number; headers?: Record<string, string> } | null) {
  const calls: { auth?: string; input: string[] }[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { input, model } = JSON.parse(body) as { input: string[]; model: string };
      calls.push({ auth: req.headers.authorization, input });
      const fail = script(calls.length);
      if (fail) {
        res.writeHead(fail.status, { 'content-type': 'application/json', ...(fail.headers ?? {}) });
        res.end(JSON.stringify({ error: { message: 'scripted failure', type: 'test' } }));
        return;
      }
      const data = input.map((text, index) => ({
        object: 'embedding',
        index,
        embedding: [...createHash('sha256').update(text).digest().subarray(0, 8)].map((b) => b - 128),
      }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data, model, usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
  });
  return { server, calls };
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

describe('OpenAI-compatible embedder (loopback server speaking the embeddings API, official client)', () => {
  it('learns the dimension, batches 64 inputs per request, normalises, keeps order', async () => {
    const { server, calls } = provider(() => null);
    const port = await listen(server);
    try {
      const e = await openAiCompatibleEmbedder(
        { provider: 'openai-compatible', baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: KEY, model: 'm' },
        new EgressPolicy([{ host: '127.0.0.1', port }]),
        measure,
      );
      expect(e).toMatchObject({ model: 'openai-compatible:m', dimension: 8 });
      const texts = Array.from({ length: 70 }, (_, i) => `text ${i}`);
      const vectors = await e.embed(texts);
      expect(calls.map((c) => c.input.length)).toEqual([1, 64, 6]);
      expect(calls[0].auth).toBe(`Bearer ${KEY}`);
      expect(Math.hypot(...vectors[5])).toBeCloseTo(1, 5);
      const [again] = await e.embed(['text 5']);
      expect(Array.from(again)).toEqual(Array.from(vectors[5]));
    } finally {
      server.close();
    }
  });

  it('retries a 429 (honouring Retry-After) and a 500, then succeeds', async () => {
    const { server, calls } = provider((n) =>
      n === 1 ? { status: 429, headers: { 'retry-after': '0' } } : n === 2 ? { status: 500 } : null,
    );
    const port = await listen(server);
    try {
      const e = await openAiCompatibleEmbedder(
        {
          provider: 'openai-compatible',
          baseUrl: `http://127.0.0.1:${port}/v1`,
          model: 'm',
          dimensions: '8',
        },
        new EgressPolicy([{ host: '127.0.0.1', port }]),
        measure,
      );
      // `dimensions` given: no probe request.
      expect(calls).toHaveLength(0);
      const [v] = await e.embed(['hello']);
      expect(v).toHaveLength(8);
      expect(calls.length).toBe(3);
    } finally {
      server.close();
    }
  });

  it('reports a refused key without the key, and a loopback address the operator did not allow', async () => {
    const { server } = provider(() => ({ status: 401 }));
    const port = await listen(server);
    try {
      const err = await openAiCompatibleEmbedder(
        { provider: 'openai-compatible', baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: KEY, model: 'm' },
        new EgressPolicy([{ host: '127.0.0.1', port }]),
        measure,
      ).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(/answered 401/);
      expect(err?.message).not.toContain(KEY);
      const refused = await openAiCompatibleEmbedder(
        { provider: 'openai-compatible', baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: KEY, model: 'm' },
        new EgressPolicy(),
        measure,
      ).then(
        () => null,
        (e: Error) => e,
      );
      expect(refused?.message).toMatch(/refused by the egress policy/);
      expect(refused?.message).not.toContain(KEY);
    } finally {
      server.close();
    }
  });
});
