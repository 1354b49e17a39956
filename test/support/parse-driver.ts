/** Run by parseMeasured: one extractText call, its outcome and the processes it left as one line. */
import { readdirSync, readFileSync } from 'node:fs';
import { DocumentError } from '../../libs/documents/src/document.errors';
import { PARSE_LIMITS, extractText } from '../../libs/documents/src/parse/extract-text';

const { path, filename, limits } = JSON.parse(process.env.PARSE_DRIVER_INPUT ?? '{}') as {
  path: string;
  filename: string;
  limits: object;
};

function children(): number {
  return readdirSync('/proc/self/task')
    .map((t) => readFileSync(`/proc/self/task/${t}/children`, 'utf8').trim())
    .filter(Boolean)
    .join(' ')
    .split(/\s+/)
    .filter(Boolean).length;
}

extractText({ path, filename }, {}, { ...PARSE_LIMITS, ...limits }).then(
  () => console.log(`result ${JSON.stringify({ error: null, childrenLeft: children() })}`),
  (err: unknown) => {
    if (!(err instanceof DocumentError)) throw err;
    console.log(`result ${JSON.stringify({ error: err.message, childrenLeft: children() })}`);
  },
);
