import { ParquetReader } from '@dsnp/parquetjs';

/** Every row of a Parquet file (a path or its bytes), read with the writer's own library. */
export async function parquetRows(file: string | Buffer): Promise<Record<string, unknown>[]> {
  const reader =
    typeof file === 'string' ? await ParquetReader.openFile(file) : await ParquetReader.openBuffer(file);
  try {
    const cursor = reader.getCursor();
    const rows: Record<string, unknown>[] = [];
    for (let r = await cursor.next(); r; r = await cursor.next()) rows.push(r as Record<string, unknown>);
    return rows;
  } finally {
    await reader.close();
  }
}
