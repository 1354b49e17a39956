/**
 * Server-Sent Events read from a fetch body: the assistant's chat is a POST (EventSource only GETs), so the
 * stream is parsed here, chunk by chunk. An event may arrive split across chunks; comment lines
 * (`: keep-alive`) are not events.
 */
export interface SseEvent {
  event: string;
  data: unknown;
}

export interface SseParser {
  /** The events completed by this chunk of text, in order. */
  push(chunk: string): SseEvent[];
}

export function sseParser(): SseParser {
  let buffer = '';
  return {
    push(chunk) {
      buffer += chunk.replace(/\r\n?/g, '\n');
      const events: SseEvent[] = [];
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const parsed = parseBlock(block);
        if (parsed) events.push(parsed);
        end = buffer.indexOf('\n\n');
      }
      return events;
    },
  };
}

function parseBlock(block: string): SseEvent | null {
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return null;
  const text = data.join('\n');
  try {
    return { event, data: JSON.parse(text) as unknown };
  } catch {
    return { event, data: text };
  }
}
