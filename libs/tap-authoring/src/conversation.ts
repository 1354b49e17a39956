import { ChatTurn, head } from '@tapyard/ai';
import type { BrainstormInput } from './tap-authoring.types';

/** A document tap's brainstorm never asks about what the platform decides (spec rule 2). */
export function documentBrainstormProblems(answer: Record<string, unknown>): string[] {
  const text = `${String(answer.reply)}\n${String(answer.description)}`;
  return /\bchunk|\bembed|vector[ -]?(store|database|db|index)|\bqdrant\b|\bpgvector\b|\bweaviate\b|\bmilvus\b|\bchroma\b/i.test(
    text,
  )
    ? [
        'the reply or description mentions chunking, embedding or vector stores, which the platform decides; ' +
          'ask only about the document source',
      ]
    : [];
}

/** The latest turns that fit the budget, starting with a user turn. */
export function trimConversation(messages: BrainstormInput['messages'], maxChars: number): ChatTurn[] {
  const out: ChatTurn[] = [];
  let size = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    const content = head(m.content, 20_000);
    if (size + content.length > maxChars && out.length > 0) break;
    size += content.length;
    out.unshift({ role: m.role, content });
  }
  while (out.length > 0 && out[0].role !== 'user') out.shift();
  return out;
}
