import { EncoderFactory, EncoderName, encoderModule } from '../destination';

const COLUMNS = [
  { name: 'id', type: 'int' as const },
  { name: 'label', type: 'string' as const },
];
const BATCH = {
  columns: COLUMNS,
  values: [
    [1, 2],
    ['a', null],
  ],
  lines: [2, 3],
};

/** What the stage thread does with a destination's encoder: require its module, make the encoder. */
function encoderOf(name: EncoderName): ReturnType<EncoderFactory> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(encoderModule(name)) as { createEncoder: EncoderFactory }).createEncoder(COLUMNS);
}

describe('encoders, by name', () => {
  it('each name resolves to the module that encodes for it', () => {
    expect(encoderOf('copy-text')(BATCH)).toBe('1\ta\n2\t\\N\n');
    expect(encoderOf('typed')(BATCH)).toBe(BATCH);
  });

  it('a destination names one of them, never a path', () => {
    // @ts-expect-error a module path is not an encoder name
    const path: EncoderName = '/tmp/anything.js';
    expect(path).toBeDefined();
  });
});
