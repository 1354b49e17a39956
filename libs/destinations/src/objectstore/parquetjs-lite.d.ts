// parquetjs-lite ships no types; only what the object-store destination and its tests use.
declare module 'parquetjs-lite' {
  export type ParquetType =
    'BOOLEAN' | 'INT32' | 'INT64' | 'FLOAT' | 'DOUBLE' | 'UTF8' | 'DATE' | 'TIMESTAMP_MILLIS' | 'DECIMAL';
  export class ParquetSchema {
    constructor(fields: Record<string, { type: ParquetType; optional?: boolean; statistics?: boolean }>);
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
    metadata: {
      schema: {
        name: string;
        converted_type?: number | null;
        precision?: number | null;
        scale?: number | null;
      }[];
    };
    close(): Promise<void>;
  }
}

// Internals that Parquet DECIMAL needs (see parquet-decimal.ts).
declare module 'parquetjs-lite/lib/types' {
  export const PARQUET_LOGICAL_TYPES: Record<
    string,
    { primitiveType: string; originalType?: string; toPrimitive: (v: unknown) => unknown }
  >;
}
declare module 'parquetjs-lite/lib/util' {
  export function decodeThrift(obj: unknown, buf: Buffer): number;
  export function serializeThrift(obj: unknown): Buffer;
}
declare module 'parquetjs-lite/gen-nodejs/parquet_types' {
  export class FileMetaData {
    schema: { name: string; precision: number | null; scale: number | null; converted_type: number | null }[];
  }
}
