import { copyProblem, putProblem } from './answers';

describe("Snowflake's answers to PUT and COPY INTO", () => {
  const file = 'part-00000.parquet';

  it('takes a file uploaded (or skipped as already there), whatever case the columns have', () => {
    expect(putProblem([{ source: file, target: file, status: 'UPLOADED', message: '' }], file)).toBeNull();
    expect(putProblem([{ SOURCE: file, STATUS: 'SKIPPED' }], file)).toBeNull();
  });

  it('refuses a PUT that did not stage the file, naming the status and the message', () => {
    expect(putProblem([{ source: file, status: 'ERROR', message: 'disk full' }], file)).toBe(
      `Snowflake did not stage ${file}: ERROR (disk full)`,
    );
    expect(putProblem([{ source: 'other.parquet', status: 'UPLOADED' }], file)).toBe(
      `Snowflake's answer to the PUT names no file ${file}`,
    );
    expect(putProblem([], file)).toMatch(/names no file/);
  });

  it('takes a COPY that loaded every row, or found the file loaded by an earlier delivery', () => {
    expect(
      copyProblem([{ file: `job=t/${file}`, status: 'LOADED', rows_parsed: 3, rows_loaded: 3 }], 3),
    ).toBeNull();
    expect(copyProblem([{ status: 'Copy executed with 0 files processed.' }], 3)).toBeNull();
    expect(
      copyProblem(
        [{ file, status: 'LOAD_SKIPPED', rows_loaded: 0, first_error: 'File was loaded before.' }],
        3,
      ),
    ).toBeNull();
  });

  it('refuses a COPY that loaded part of the file, none of it, or said nothing', () => {
    expect(copyProblem([{ file, status: 'LOADED', rows_loaded: 2 }], 3)).toBe(
      `Snowflake loaded 2 of the 3 rows of ${file}`,
    );
    expect(
      copyProblem(
        [{ file, status: 'PARTIALLY_LOADED', rows_loaded: 2, first_error: 'Numeric value out of range' }],
        3,
      ),
    ).toBe(`Snowflake did not load ${file}: PARTIALLY_LOADED (Numeric value out of range)`);
    expect(copyProblem([{ file, status: 'LOAD_FAILED' }], 3)).toBe(
      `Snowflake did not load ${file}: LOAD_FAILED`,
    );
    expect(copyProblem([], 3)).toBe('Snowflake answered the COPY INTO with no status');
  });
});
