import type { JsonRowsPayload } from '../destination';
import { packRows, sliceRows } from '../encoders/pack-rows';
import { jsonRowText } from '../sinks/json-rows';
import { RowRun, restBody } from './rest-body';

/** Rows whose texts hold what byte offsets get wrong: multi-byte characters, escapes, separators. */
const ROWS: unknown[] = [
  { s: 'é', n: 1 },
  { s: '', n: null },
  { s: 'a,"b"}\\{', n: -0.5 },
  { s: '😀 line\nbreak\u2028', n: 2 },
  {},
  { s: 'ascii', n: 3 },
  { s: '中文,', n: 4 },
];
const TEXTS = ROWS.map((r) => JSON.stringify(r));

function texts(p: JsonRowsPayload): string[] {
  return Array.from(p.ends, (_, r) => jsonRowText(p, r));
}

describe('REST bodies from the stage thread’s row buffers', () => {
  it('keeps each row’s text and line, multi-byte characters included', () => {
    const p = packRows(TEXTS, [2, 3, 5, 6, 7, 8, 9]);
    expect(texts(p)).toEqual(TEXTS);
    expect([...p.lines]).toEqual([2, 3, 5, 6, 7, 8, 9]);
    expect(Buffer.from(p.bytes).toString('utf8')).toBe(TEXTS.join(','));
  });

  it.each<[string, number[][]]>([
    ['one payload whole', [[0, 7]]],
    [
      'a request spanning payloads',
      [
        [0, 2],
        [2, 3],
        [3, 7],
      ],
    ],
    [
      'single rows',
      [
        [0, 1],
        [1, 2],
        [2, 3],
        [3, 4],
        [4, 5],
        [5, 6],
        [6, 7],
      ],
    ],
  ])('is the JSON array and the ndjson of the rows: %s', (_, cuts) => {
    const whole = packRows(
      TEXTS,
      TEXTS.map((_t, i) => i + 2),
    );
    // Each cut a payload of its own (as the chunks of a file), the request taking all of them.
    const runs: RowRun[] = cuts.map(([from, to]) => ({
      payload: sliceRows(whole, from, to),
      from: 0,
      to: to - from,
    }));
    const json = Buffer.concat(restBody(runs, 'json')).toString('utf8');
    expect(json).toBe(`[${TEXTS.join(',')}]`);
    expect(JSON.parse(json)).toEqual(ROWS);
    const ndjson = Buffer.concat(restBody(runs, 'ndjson')).toString('utf8');
    expect(ndjson).toBe(`${TEXTS.join('\n')}\n`);
    expect(
      ndjson
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual(ROWS);
  });

  it('takes a run from the middle of a payload', () => {
    const p = packRows(
      TEXTS,
      TEXTS.map((_t, i) => i + 2),
    );
    const runs: RowRun[] = [
      { payload: p, from: 2, to: 4 },
      { payload: p, from: 6, to: 7 },
    ];
    expect(Buffer.concat(restBody(runs, 'json')).toString('utf8')).toBe(
      `[${[TEXTS[2], TEXTS[3], TEXTS[6]].join(',')}]`,
    );
    expect(Buffer.concat(restBody(runs, 'ndjson')).toString('utf8')).toBe(
      `${TEXTS[2]}\n${TEXTS[3]}\n${TEXTS[6]}\n`,
    );
  });

  it('writes a valid body when runs hold no rows (none at all, or some empty among others)', () => {
    const p = packRows(
      TEXTS,
      TEXTS.map((_t, i) => i + 2),
    );
    expect(Buffer.concat(restBody([], 'json')).toString('utf8')).toBe('[]');
    expect(Buffer.concat(restBody([], 'ndjson')).toString('utf8')).toBe('');
    const runs: RowRun[] = [
      { payload: p, from: 1, to: 1 },
      { payload: p, from: 2, to: 3 },
      { payload: p, from: 5, to: 5 },
    ];
    expect(JSON.parse(Buffer.concat(restBody(runs, 'json')).toString('utf8'))).toEqual([ROWS[2]]);
    expect(Buffer.concat(restBody(runs, 'ndjson')).toString('utf8')).toBe(`${TEXTS[2]}\n`);
  });

  it('packs no rows as an empty payload', () => {
    const p = packRows([], []);
    expect(p.bytes.length).toBe(0);
    expect(p.ends.length).toBe(0);
  });
});
