import type { CsvChunkPayload, Payload, PgBinaryPayload } from '@tapyard/destinations';
import { PartBuffers } from './part-buffers';

const SIZE = 1 << 16;

function view(b: Buffer, from: number, to: number): CsvChunkPayload {
  return {
    kind: 'csv',
    bytes: b.subarray(from, to),
    rows: 1,
    line: 1,
    eol: 'lf',
    copyOptions: 'FORMAT csv',
    columns: ['a'],
  };
}

function written(payloads: Payload[]): void {
  for (const p of payloads) if (typeof p === 'object' && 'kind' in p && p.kind === 'csv') p.written?.();
}

describe('PartBuffers', () => {
  it('gives each part a whole buffer of its own, new while none was written', () => {
    const parts = new PartBuffers();
    const a = parts.memory(SIZE);
    const b = parts.memory(SIZE);
    expect([a.length, a.byteOffset, a.buffer.byteLength]).toEqual([SIZE, 0, SIZE]);
    expect(b.buffer).not.toBe(a.buffer);
  });

  it('hands a buffer out again only once every chunk that views it was written', () => {
    const parts = new PartBuffers();
    const part = parts.memory(SIZE);
    part.fill('x');
    const batch = [view(part, 0, 10), view(part, 10, SIZE)];
    parts.track([batch]);
    batch[0].written?.();
    batch[0].written?.(); // a second call of the same chunk counts once
    const meanwhile = parts.memory(SIZE);
    expect(meanwhile.buffer).not.toBe(part.buffer);
    meanwhile.fill('y');
    expect(part.toString('latin1', SIZE - 3)).toBe('xxx');
    batch[1].written?.();
    const next = parts.memory(SIZE);
    expect(next.buffer).toBe(part.buffer);
  });

  it('frees nothing of a batch that holds another payload than CSV chunks and COPY text', () => {
    const parts = new PartBuffers();
    const part = parts.memory(SIZE);
    const batch: Payload[] = [view(part, 0, 10), 'copy text\n', new Uint8Array(part.buffer, 10, 5)];
    parts.track([batch]);
    written(batch);
    expect(parts.memory(SIZE).buffer).not.toBe(part.buffer);
  });

  it('keeps only sizes it handed out, and at most its limit of free buffers', () => {
    const parts = new PartBuffers(1);
    const stranger = Buffer.allocUnsafeSlow(SIZE / 2);
    const a = parts.memory(SIZE);
    const b = parts.memory(SIZE);
    const batch = [view(stranger, 0, 10), view(a, 0, 10), view(b, 0, 10)];
    parts.track([batch]);
    written(batch);
    expect(parts.memory(SIZE / 2).buffer).not.toBe(stranger.buffer);
    const again = parts.memory(SIZE).buffer;
    expect([a.buffer, b.buffer]).toContain(again);
    expect(parts.memory(SIZE).buffer).not.toBe(again);
  });

  it('takes back the part buffers the binary encoder is done with, and only sizes it handed out', () => {
    const parts = new PartBuffers();
    const part = parts.memory(SIZE);
    parts.reuse([part.buffer as ArrayBuffer, new ArrayBuffer(SIZE + 1)]);
    expect(parts.memory(SIZE).buffer).toBe(part.buffer);
    expect(parts.memory(SIZE).buffer).not.toBe(part.buffer);
    parts.reuse(undefined);
  });

  it('hands the memory of a binary COPY piece back once, when its loader has sent it', () => {
    const parts = new PartBuffers();
    const back: ArrayBuffer[] = [];
    const piece: PgBinaryPayload = {
      kind: 'pg-binary',
      bytes: new Uint8Array(64),
      rows: 1,
      columns: ['a'],
      types: ['text'],
    };
    parts.track([[piece]]);
    expect(piece.written).toBeUndefined(); // no taker: left to the collector
    parts.onBinaryWritten = (b) => back.push(b);
    parts.track([[piece]]);
    piece.written?.();
    piece.written?.();
    expect(back).toEqual([piece.bytes.buffer]);
  });
});
