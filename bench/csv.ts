/**
 * `npm run bench:csv` — in-process throughput of the CSV reading paths, no servers: the reference
 * reader (readCsv) on ~30 MB of typical and of non-ASCII-heavy CSV, and the fast path's cutter
 * (csvRows) and check (compileCsvCheck) on 1,000,000 narrow rows. Prints the best of 3 runs in MB/s;
 * fails only when a path reads the wrong number of records. These figures used to be logged from
 * `npm test`, where they cost minutes and asserted nothing about speed.
 */
import { Readable } from 'node:stream';
import { readCsv } from '../libs/readers/src/csv-reader';
import { csvRows } from '../libs/readers/src/fastpath/csv-rows';
import { compileCsvCheck } from '../libs/readers/src/fastpath/csv-check';
import { checkComparable } from './support';

const CSV = { delimiter: ',', quote: '"', escape: null } as const;
const RUNS = 3;

function pieces(data: Buffer, size = 64 * 1024): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; i += size) out.push(data.subarray(i, i + size));
  return out;
}

async function* from(buffers: Buffer[]): AsyncGenerator<Buffer> {
  yield* buffers;
}

/** ~30 MB of CSV with 8 mixed columns; `names` sets how much non-ASCII text there is. */
function mixedCsv(names: string[]): Buffer {
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

/** id int, amount double, label string, flag boolean, day date: ~35 bytes a row. */
function narrowCsv(rows: number): Buffer {
  const lines = ['id,amount,label,flag,day\n'];
  for (let i = 0; i < rows; i++) {
    const day = `2024-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`;
    lines.push(
      `${i},${(((i * 7919) % 1_000_000) / 100).toFixed(2)},L${i % 100},${i % 3 ? 'true' : 'false'},${day}\n`,
    );
  }
  return Buffer.from(lines.join(''));
}

/** Runs `pass` RUNS times over `bytes`; prints the best rate; throws if a pass counts other than `expected`. */
async function measure(label: string, bytes: number, expected: number, pass: () => Promise<number>) {
  let best = 0;
  for (let run = 0; run < RUNS; run++) {
    const start = process.hrtime.bigint();
    const records = await pass();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    if (records !== expected) throw new Error(`${label}: read ${records} records, expected ${expected}`);
    best = Math.max(best, bytes / 1e6 / seconds);
  }
  console.log(`${label}: ${(bytes / 1e6).toFixed(1)} MB, best of ${RUNS}: ${best.toFixed(0)} MB/s`);
}

async function readerRows(data: Buffer): Promise<number> {
  let rows = 0;
  const opts = { ...CSV, encoding: 'utf-8' as const, header: true };
  for await (const batch of readCsv(Readable.from(pieces(data)), opts)) rows += batch.rows.length;
  return rows;
}

async function main(): Promise<void> {
  const names = ['Jonathan Smith', 'Ann Lee', 'Peter Parker', 'Mary Jones', 'Zoë Müller'];
  const typical = mixedCsv([...names, ...Array<string>(45).fill('Sam Ward')]);
  await measure('readCsv typical', typical.length, 260_000, () => readerRows(typical));
  const dense = mixedCsv(['Jonathan Smith', 'Zoë Müller', 'Ann Lee', 'Jürgen Groß']);
  await measure('readCsv dense non-ASCII', dense.length, 260_000, () => readerRows(dense));

  const narrow = narrowCsv(1_000_000);
  const inputs = pieces(narrow);
  await measure('csvRows', narrow.length, 1_000_000, async () => {
    let records = 0;
    for await (const p of csvRows(from(inputs), { ...CSV, header: true }))
      if (p.kind === 'chunk') records += p.records;
    return records;
  });

  const chunks: Buffer[] = [];
  for await (const p of csvRows(from(inputs), { ...CSV, header: true }))
    if (p.kind === 'chunk') chunks.push(p.bytes);
  const check = compileCsvCheck({ ...CSV, types: ['int', 'double', 'string', 'boolean', 'date'] });
  await measure('compileCsvCheck', narrow.length, 1_000_000, () => {
    let records = 0;
    for (const chunk of chunks) {
      const v = check(chunk);
      if (v.clean) records += v.records;
    }
    return Promise.resolve(records);
  });
}

checkComparable();
main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
