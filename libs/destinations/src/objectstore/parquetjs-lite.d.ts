// parquetjs-lite ships no types; only what the object-store destination and its tests use.
declare module 'parquetjs-lite' {
  export type ParquetType =
    'BOOLEAN' | 'INT32' | 'INT64' | 'FLOAT' | 'DOUBLE' | 'UTF8' | 'DATE' | 'TIMESTAMP_MILLIS';
  export class ParquetSchema {
    constructor(fields: Record<string, { type: ParquetType; optional?: boolean }>);
  }
  export class ParquetWriter {
    static openFile(schema: ParquetSchema, path: string): Promise<ParquetWriter>;
    setRowGroupSize(rows: number): void;
    appendRow(row: Record<string, unknown>): Promise<void>;
    close(): Promise<void>;
  }
  export class ParquetReader {
    static openFile(path: string): Promise<ParquetReader>;
    static openBuffer(buffer: Buffer): Promise<ParquetReader>;
    getCursor(): { next(): Promise<Record<string, unknown> | null> };
    getRowCount(): { toNumber(): number };
    close(): Promise<void>;
  }
}
