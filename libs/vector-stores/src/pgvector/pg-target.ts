/** The server and database a pgvector secret names. */
export interface PgTarget {
  host: string;
  port: number;
  user?: string;
  password?: string;
  database?: string;
}

const NOT_A_URL = "secret 'pgvector' has a connectionString that is not a postgres:// URL";

/** From `connectionString`, or from separate `host`, `port`, `user`, `password`, `database` fields. */
export function pgTarget(fields: Record<string, string>): PgTarget {
  if (fields.connectionString) {
    let url: URL;
    try {
      url = new URL(fields.connectionString);
    } catch {
      throw new Error(NOT_A_URL);
    }
    if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw new Error(NOT_A_URL);
    const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
    return {
      host: url.hostname,
      port: url.port ? Number(url.port) : 5432,
      user: url.username ? decodeURIComponent(url.username) : undefined,
      password: url.password ? decodeURIComponent(url.password) : undefined,
      database: name || undefined,
    };
  }
  if (!fields.host) throw new Error("secret 'pgvector' has no connectionString or host field");
  return {
    host: fields.host,
    port: fields.port ? Number(fields.port) : 5432,
    user: fields.user ?? fields.username,
    password: fields.password,
    database: fields.database ?? fields.dbName,
  };
}
