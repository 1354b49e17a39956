/** Three documents on unrelated subjects: a query about one finds it first in any sound store. */
export const CORPUS = {
  'kb/leave':
    '# Annual leave policy\n\nEvery full-time employee receives twenty-five days of paid vacation per calendar year. ' +
    'Vacation days must be requested from your manager at least two weeks in advance.\n\n' +
    'Unused holiday allowance of up to five days may be carried over into the first quarter of the next year. ' +
    "Sick leave is separate from vacation and requires a doctor's note after three days.",
  'kb/security':
    '# Information security\n\nPasswords must be at least sixteen characters long and are never shared by email. ' +
    'Laptops lock automatically after five minutes. Report phishing messages to the security team at once.\n\n' +
    'Two-factor authentication is required for every account that can reach customer data.',
  'kb/canteen':
    '# Canteen\n\nThe canteen on the ground floor serves breakfast from seven to ten and lunch from noon to two. ' +
    'Vegetarian and vegan dishes are available every day; the soup of the day costs three euros.',
};

/** A document tap yielding `docs` as `{uri, filename, content (base64), metadata}` records. */
export function documentTapScript(docs: Record<string, string>): string {
  const items = Object.entries(docs).map(([uri, text]) => ({
    uri,
    filename: `${uri.split('/').pop()}.md`,
    content: Buffer.from(text).toString('base64'),
    metadata: { section: uri.split('/').pop(), year: 2026 },
  }));
  return `
import json
DOCS = json.loads(${JSON.stringify(JSON.stringify(items))})
def fetch():
    for d in DOCS:
        yield d
`;
}
