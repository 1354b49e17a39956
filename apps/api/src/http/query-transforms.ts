/** Query strings carry text: `true` / `false` become booleans; anything else is left for the validator to name. */
export const toBool = ({ value }: { value: unknown }) =>
  value === 'true' ? true : value === 'false' ? false : value;
