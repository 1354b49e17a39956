/** Inputs shared by the fast-path specs (not built: see tsconfig.build.json). */

/** id int, amount double, label string, flag boolean, day date: ~35 bytes a row. */
export function narrowCsv(rows: number): Buffer {
  const lines = ['id,amount,label,flag,day\n'];
  for (let i = 0; i < rows; i++) {
    const day = `2024-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`;
    lines.push(
      `${i},${(((i * 7919) % 1_000_000) / 100).toFixed(2)},L${i % 100},${i % 3 ? 'true' : 'false'},${day}\n`,
    );
  }
  return Buffer.from(lines.join(''));
}
