/**
 * Column names that look like they hold personal or secret values. Such columns never show values
 * to a model (natural-language SQL, advice) nor in evidence (incidents): only counts and rates.
 */
const SENSITIVE =
  /pass|secret|token|key|salt|hash|ssn|social|iban|card|cvv|email|e_mail|phone|mobile|address|birth|dob|salary|account|ip_?addr/i;

export function looksSensitive(columnName: string): boolean {
  return SENSITIVE.test(columnName);
}
