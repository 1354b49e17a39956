import fc from 'fast-check';
import { jsonObjectIn } from './structured';

describe('jsonObjectIn: the JSON object in a model answer', () => {
  const object = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 });

  it('finds any object bare, fenced with prose around it, or between prose', () => {
    fc.assert(
      fc.property(object, fc.constantFrom('', 'Here you go:\n', 'Sure. '), (o, prose) => {
        const text = JSON.stringify(o, null, 1);
        expect(jsonObjectIn(text)).toEqual(JSON.parse(text));
        expect(jsonObjectIn(`${prose}\`\`\`json\n${text}\n\`\`\`\nAnything else?`)).toEqual(JSON.parse(text));
        expect(jsonObjectIn(`${prose}${text}`)).toEqual(JSON.parse(text));
      }),
      { numRuns: 500, seed: 3 },
    );
  });

  it('answers null for text without one object, and for arrays', () => {
    expect(jsonObjectIn('no json here')).toBeNull();
    expect(jsonObjectIn('[1, 2]')).toBeNull();
    expect(jsonObjectIn('{"a": 1')).toBeNull();
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('a', ' ', '"', ':', '[', ']') }), (t) =>
        expect(jsonObjectIn(t)).toBeNull(),
      ),
    );
  });
});
