/** Where staged inputs live in an environment's `staged` bucket: `spool/<id>/part-NNNNNN`, `…/end`. */
export const STAGING_PREFIX = 'spool/';
/** A staging id is a token the platform made (a job's pipeline token), never a client's name. */
const STAGING_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

export function checkedId(id: string): string {
  if (!STAGING_ID.test(id)) throw new Error(`not a staging id: ${JSON.stringify(id.slice(0, 80))}`);
  return id;
}
export const partKey = (id: string, n: number) => `${STAGING_PREFIX}${id}/part-${String(n).padStart(6, '0')}`;
export const endKey = (id: string) => `${STAGING_PREFIX}${id}/end`;
export const stopKey = (id: string, reader: string) => `${STAGING_PREFIX}${id}/stop-${checkedId(reader)}`;
