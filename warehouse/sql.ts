/**
 * Literal quoting for the few values queries embed. ClickHouse 18.16 has no query
 * parameters ({name:Type}), so values are escaped here, never concatenated raw.
 */

/** A single-quoted ClickHouse string literal. */
export function sqlString(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t').replace(/\0/g, '\\0')}'`;
}

/** A finite number literal; throws on NaN/Infinity so nothing odd reaches the SQL. */
export function sqlNumber(value: number): string {
  if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
  return String(value);
}
