import { scriptRules } from './prompts';

describe('tap authoring prompts', () => {
  it.each(['structured', 'document'] as const)(
    'tell the model how a %s tap keeps incremental state',
    (tapType) => {
      const rules = scriptRules(tapType);
      expect(rules).toContain('def fetch(state):');
      expect(rules).toMatch(/commits the new state only after the records loaded/);
      expect(rules).toMatch(/Change the dict in place, never rebind the name/);
    },
  );
});
