import { Readable } from 'node:stream';
import { readCsv } from './csv-reader';

/** ~30 MB of CSV with 8 mixed columns; `names` sets how much non-ASCII text there is. */
function generate(names: string[]): Buffer {
  const lines = ['id,created_at,name,email,amount,active,note,code\n'];
  for (let i = 0; i < 260_000; i++) {
    lines.push(
      `${i},2024-03-${String((i % 28) + 1).padStart(2, '0')} 12:${String(i % 60).padStart(2, '0')}:56,` +
        `${names[i % names.length]},user${i}@example.com,${(i * 1.37).toFixed(2)},${i % 2 ? 'true' : 'false'},` +
        `"Note ${i}, with a comma",ABC-${i % 1000}\n`,
    );
  }
  return Buffer.from(lines.join(''));
}

async function measure(label: string, data: Buffer): Promise<number> {
  const chunks: Buffer[] = [];
  for (let i = 0; i < data.length; i += 64 * 1024) chunks.push(data.subarray(i, i + 64 * 1024));
  let best = 0;
  let rows = 0;
  for (let run = 0; run < 3; run++) {
    rows = 0;
    const start = process.hrtime.bigint();
    const opts = { delimiter: ',', quote: '"', escape: null, encoding: 'utf-8' as const, header: true };
    for await (const batch of readCsv(Readable.from(chunks), opts)) rows += batch.rows.length;
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    best = Math.max(best, data.length / 1e6 / seconds);
  }
  console.log(
    `readCsv ${label}: ${(data.length / 1e6).toFixed(1)} MB, ${rows} rows, best of 3: ${best.toFixed(0)} MB/s`,
  );
  return rows;
}

/** Logs the CSV reader's throughput (no timing assertion: machines differ). */
describe('readCsv throughput', () => {
  it('reads ~30 MB of typical mixed CSV (a few non-ASCII names)', async () => {
    const names = ['Jonathan Smith', 'Ann Lee', 'Peter Parker', 'Mary Jones', 'Zoë Müller'];
    expect(await measure('typical', generate([...names, ...Array<string>(45).fill('Sam Ward')]))).toBe(
      260_000,
    );
  });

  it('reads ~30 MB of CSV where half the rows hold non-ASCII text', async () => {
    expect(
      await measure('dense non-ASCII', generate(['Jonathan Smith', 'Zoë Müller', 'Ann Lee', 'Jürgen Groß'])),
    ).toBe(260_000);
  });
});
