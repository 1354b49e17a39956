/**
 * `npm run bench:xsd` — records/s of the XSD check XML pipelines run on each batch (XsdRecordValidator:
 * libxml2 compiled to WebAssembly, in a thread of its own per batch) against native libxml2 through
 * lxml checking the same documents against the same schema in one Python process (the time inside it,
 * not its start). BENCH_XSD_RECORDS records (default 20,000) in the readers' batches of 5,000; one in
 * 97 is invalid, and the run fails unless both sides find the same ones. lxml comes from PyPI into
 * $TAPYARD_HOME/venvs/bench-lxml the first time. Best of 3 runs each; in process, no servers.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateXsd } from '../libs/schemas/src/xsd';
import { XsdRecordValidator } from '../libs/schemas/src/xsd-validator';
import { checkComparable } from './support';

const RECORDS = Number(process.env.BENCH_XSD_RECORDS ?? 20_000);
const BATCH = 5_000;
const RUNS = 3;
const LXML = '6.0.2';

const SAMPLE =
  '<feed><item sku="A1"><qty>2</qty><name>first</name><price>1.50</price><day>2026-03-01</day></item></feed>';

/** The same record as the reader's object and as the document the validator writes of it. */
function record(i: number): { object: Record<string, unknown>; xml: string } {
  const qty = i % 97 === 0 ? 'many' : String(i % 50);
  const fields = {
    qty,
    name: `item ${i}`,
    price: (i * 0.37).toFixed(2),
    day: `2026-03-${String(1 + (i % 28)).padStart(2, '0')}`,
  };
  const body = Object.entries(fields)
    .map(([k, v]) => `<${k}>${v}</${k}>`)
    .join('');
  return { object: { '@sku': `S${i}`, ...fields }, xml: `<feed><item sku="S${i}">${body}</item></feed>` };
}

function lxmlPython(): string {
  const venv = join(process.env.TAPYARD_HOME ?? join(homedir(), '.cache', 'tapyard'), 'venvs', 'bench-lxml');
  const python = join(venv, 'bin', 'python');
  if (!existsSync(python)) {
    execFileSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
    execFileSync(python, ['-m', 'pip', 'install', '-q', `lxml==${LXML}`], { stdio: 'inherit' });
  }
  return python;
}

// Reads the schema and one document per line; prints the seconds of its best run and the invalid rows.
const LXML_SCRIPT = `
import json, sys, time
from lxml import etree
schema = etree.XMLSchema(etree.fromstring(open(sys.argv[1], 'rb').read()))
docs = open(sys.argv[2], 'rb').read().split(b'\\n')
best, invalid = None, None
for _ in range(int(sys.argv[3])):
    started = time.perf_counter()
    bad = [i for i, d in enumerate(docs) if not schema.validate(etree.fromstring(d))]
    took = time.perf_counter() - started
    best = took if best is None or took < best else best
    invalid = bad
print(json.dumps({"seconds": best, "invalid": invalid}))
`;

async function main(): Promise<void> {
  const xsd = generateXsd('feed', SAMPLE);
  const records = Array.from({ length: RECORDS }, (_, i) => record(i));
  const dir = await mkdtemp(join(tmpdir(), 'tapyard-bench-xsd-'));
  try {
    let best = Infinity;
    let invalid: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const started = process.hrtime.bigint();
      const found: number[] = [];
      // One validator for all the batches, as a job holds one.
      const validator = XsdRecordValidator.create(xsd, 'item');
      for (let at = 0; at < RECORDS; at += BATCH) {
        const batch = records.slice(at, at + BATCH).map((r) => r.object);
        const reasons = await validator.check(batch);
        reasons.forEach((r, i) => r !== null && found.push(at + i));
      }
      best = Math.min(best, Number(process.hrtime.bigint() - started) / 1e9);
      invalid = found;
    }
    await writeFile(join(dir, 'schema.xsd'), xsd);
    await writeFile(join(dir, 'docs.xml'), records.map((r) => r.xml).join('\n'));
    await writeFile(join(dir, 'check.py'), LXML_SCRIPT);
    const native = JSON.parse(
      execFileSync(
        lxmlPython(),
        [join(dir, 'check.py'), join(dir, 'schema.xsd'), join(dir, 'docs.xml'), String(RUNS)],
        {
          encoding: 'utf8',
        },
      ),
    ) as { seconds: number; invalid: number[] };
    if (invalid.length === 0 || JSON.stringify(invalid) !== JSON.stringify(native.invalid))
      throw new Error(
        `the two sides disagree: Tapyard found ${invalid.length} invalid records, lxml ${native.invalid.length}`,
      );
    const ours = RECORDS / best;
    const theirs = RECORDS / native.seconds;
    console.log(
      `XSD check, ${RECORDS.toLocaleString('en')} records (${invalid.length} invalid, found by both), best of ${RUNS}:\n` +
        `  Tapyard (libxml2 in WebAssembly, batches of ${BATCH}) ${Math.round(ours).toLocaleString('en')} records/s\n` +
        `  lxml ${LXML} (native libxml2, one process)         ${Math.round(theirs).toLocaleString('en')} records/s\n` +
        `  ratio ${(ours / theirs).toFixed(2)}`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

checkComparable();
main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
