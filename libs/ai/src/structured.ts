/**
 * The JSON object in a model's answer: the whole text, or the first fenced block, or the outermost
 * braces of the text, so that servers without a JSON mode still work. Null when there is none.
 */
export function jsonObjectIn(text: string): Record<string, unknown> | null {
  const candidates: string[] = [text.trim()];
  const fenced = /```(?:json|JSON)?[ \t]*\r?\n([\s\S]*?)\r?\n?```/.exec(text);
  if (fenced) candidates.push(fenced[1].trim());
  const first = text.indexOf('{');
  const last = text.lastIndexOf('}');
  if (first >= 0 && last > first) candidates.push(text.slice(first, last + 1));
  for (const c of candidates) {
    try {
      const v: unknown = JSON.parse(c);
      if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      // the next candidate
    }
  }
  return null;
}

/** A rough token count (4 characters a token), the budget's measure before anything is sent. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** The last `maxChars` of a text (logs: the end says most), marked when cut. */
export function tail(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `[... ${text.length - maxChars} earlier characters cut ...]\n${text.slice(text.length - maxChars)}`;
}

/** The first `maxChars` of a text, marked when cut. */
export function head(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n[... ${text.length - maxChars} more characters cut ...]`;
}
