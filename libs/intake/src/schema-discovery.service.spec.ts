import { TapyardConfig, ValidationError } from '@tapyard/core';
import { UploadedSample } from './sample';
import { SchemaDiscoveryService, guessRowElement } from './schema-discovery.service';
import { UploadErrorCode } from './upload-errors';

const service = new SchemaDiscoveryService({
  environment: 'dev',
  database: { name: 'tapyard' },
} as TapyardConfig);

function sample(filename: string, text: string): UploadedSample {
  return { filename, fields: new Map(), head: Buffer.from(text), truncated: false };
}

/** CPU milliseconds `run` takes: steadier than wall time on a shared machine. */
async function cpuMs(run: () => Promise<unknown>): Promise<number> {
  const started = process.cpuUsage();
  await run();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000;
}

/** An 8 MiB XML sample (what generate keeps of a file) of elements nested in one another. */
const DEEP_XML = '<a>'.repeat((8 * 1024 * 1024) / 3);

describe('guessRowElement', () => {
  it('takes the first element inside the root, else the root, else row', () => {
    expect(guessRowElement('<?xml version="1.0"?>\n<export>\n  <item id="1"/>')).toBe('item');
    expect(guessRowElement('<only/>')).toBe('only');
    expect(guessRowElement('no tags')).toBe('row');
  });

  // Audit finding 3: every start tag of the head was collected, 1.4 s of CPU and 450 MiB for 8 MiB.
  it('reads no further than the second start tag of an 8 MiB head', async () => {
    let guessed = '';
    expect(await cpuMs(async () => (guessed = guessRowElement(DEEP_XML)))).toBeLessThan(200);
    expect(guessed).toBe('a');
  });
});

describe('SchemaDiscoveryService.generateFromSample', () => {
  it('proposes an XML pipeline reading the guessed row element', async () => {
    const proposal = await service.generateFromSample('dev', sample('orders.xml', '<r><order id="1"/></r>'));
    expect(proposal.source.fileAttributes).toEqual({ format: 'xml', xmlAttributes: { rowElement: 'order' } });
  });

  it('answers 400 naming the depth limit for an 8 MiB XML sample nested in one chain', async () => {
    let error: unknown;
    const ms = await cpuMs(() =>
      service.generateFromSample('dev', sample('x.xml', DEEP_XML)).catch((e) => (error = e)),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({
      status: 400,
      domainCode: UploadErrorCode.Unreadable,
      message: 'XML nested deeper than 256 elements at line 1, column 771',
    });
    expect(ms).toBeLessThan(500);
  });
});
