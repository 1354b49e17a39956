import { Injectable } from '@nestjs/common';
import { AiService, head } from '@tapyard/ai';

export interface AnswerInput {
  question: string;
  context: { text: string; source?: string }[];
}
export interface AnswerResult {
  answer: string;
  citations: string[];
}

const ANSWER_SCHEMA = {
  type: 'object',
  required: ['answer', 'citations'],
  properties: { answer: { type: 'string' }, citations: { type: 'array', items: { type: 'string' } } },
};

/** Answers from given context only; citations are only sources that were given. */
@Injectable()
export class AnswerService {
  constructor(private readonly ai: AiService) {}

  async answer(env: string, input: AnswerInput, signal?: AbortSignal): Promise<AnswerResult> {
    const model = await this.ai.model(env, 'answer');
    const budget = model.inputChars(3000);
    const per = Math.max(500, Math.floor(budget / Math.max(1, input.context.length)));
    const passages = input.context
      .map((c, i) => `[${i + 1}] source: ${c.source ?? '(none)'}\n${head(c.text, per)}`)
      .join('\n\n');
    const res = await model.json<AnswerResult>({
      name: 'answer',
      schema: ANSWER_SCHEMA,
      system:
        'Answer the question using only the numbered passages. If they do not contain the answer, say that you do ' +
        'not know; never use outside knowledge. In `citations` list the `source` values of the passages you used, ' +
        'exactly as given. Answer with one JSON object: {"answer": string, "citations": [string]}.',
      messages: [
        {
          role: 'user',
          content: `Passages:\n${head(passages, budget)}\n\nQuestion: ${head(input.question, 4000)}`,
        },
      ],
      signal,
    });
    // A citation the model made up is dropped: only sources that were given count.
    const given = new Set(
      input.context.map((c) => c.source).filter((s): s is string => typeof s === 'string'),
    );
    return { answer: res.answer, citations: [...new Set(res.citations.filter((c) => given.has(c)))] };
  }
}
