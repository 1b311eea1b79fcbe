/**
 * How the CLI renders things for people: tables, ages, digest prefixes, and text from the server made
 * safe for a terminal. Commands decide what to show; this module decides how it looks.
 */

/**
 * Control characters, C1 controls, line and paragraph separators and bidirectional overrides: a result
 * or an error message could carry them (a webhook's answer is not ours), and a terminal would act on
 * them (move the cursor, recolour, reorder text). They are shown escaped instead.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's job.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * The unsafe characters `JSON.stringify` leaves as they are. C0 controls are excluded: inside strings
 * it escapes them itself, and outside strings they are the indentation's own newlines.
 */
const UNSAFE_BEYOND_C0 = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text from the server, made inert for a terminal: every unsafe character becomes `\u{…}`.
 *
 * @example
 * ```ts
 * clean('ok\u001b[2J'); // 'ok\\u{1b}[2J'
 * ```
 */
export function clean(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u{${(c.codePointAt(0) as number).toString(16)}}`);
}

/**
 * JSON for `--json` output and for values shown inline: `JSON.stringify` escapes C0 controls itself;
 * the other unsafe characters are escaped as `\uXXXX`, which is still the same JSON (they can only
 * occur inside strings).
 *
 * @example
 * ```ts
 * jsonText({ a: '\u009b' }); // '{"a":"\\u009b"}'
 * ```
 */
export function jsonText(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? 'null').replace(
    UNSAFE_BEYOND_C0,
    (c) => `\\u${(c.codePointAt(0) as number).toString(16).padStart(4, '0')}`,
  );
}

/** A JSON value shown on one line, cut at `max` characters (the whole value is in `--json`). */
export function inlineJson(value: unknown, max = 200): string {
  const text = jsonText(value);
  return text.length <= max
    ? text
    : `${text.slice(0, max - 1)}… (${text.length} characters; --json shows all)`;
}

/**
 * How long ago an ISO time was, in the largest whole unit: `42s`, `5m`, `3h`, `12d`. A time in the
 * future (clock skew) is `0s`; an unreadable one is `-`.
 *
 * @example
 * ```ts
 * age('2025-01-01T00:00:00Z', Date.parse('2025-01-01T00:05:30Z')); // '5m'
 * ```
 */
export function age(iso: string | null | undefined, now: number): string {
  const then = iso ? Date.parse(iso) : Number.NaN;
  if (Number.isNaN(then)) return '-';
  const seconds = Math.max(0, Math.floor((now - then) / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

/** An ISO time with how long ago (or how far ahead) it is: `2025-01-01T00:00:00.000Z (5m ago)`. */
export function when(iso: string | null | undefined, now: number): string {
  if (!iso) return '-';
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return clean(iso);
  if (then > now + 1000) return `${clean(iso)} (in ${age(new Date(now).toISOString(), then)})`;
  return `${clean(iso)} (${age(iso, now)} ago)`;
}

/** Hex characters of a digest shown in listings: 48 bits, plenty to tell operations apart by eye. */
export const DIGEST_PREFIX_HEX = 12;

/**
 * The start of an arguments digest, for tables (`v1:9f2c8a1b0c3d`). Decisions always use the full
 * digest.
 */
export function digestPrefix(digest: string): string {
  const [version, hex] = digest.split(':');
  return hex === undefined
    ? clean(digest.slice(0, 16))
    : `${clean(version ?? '')}:${clean(hex.slice(0, DIGEST_PREFIX_HEX))}`;
}

/**
 * Columns padded to their widest cell, two spaces apart; the last column is not padded. Cells must be
 * clean already.
 *
 * @example
 * ```ts
 * table(['ID', 'STATE'], [['op-1', 'uncertain']]); // 'ID    STATE\nop-1  uncertain\n'
 * ```
 */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[headers, ...rows].map(line).join('\n')}\n`;
}

/**
 * Label/value lines, labels padded to the widest (`state      uncertain`). Values spanning several
 * lines are indented under the first.
 */
export function fields(entries: readonly (readonly [string, string])[]): string {
  const width = Math.max(...entries.map(([label]) => label.length));
  return entries
    .map(
      ([label, value]) => `${label.padEnd(width)}  ${value.split('\n').join(`\n${' '.repeat(width + 2)}`)}`,
    )
    .join('\n')
    .concat('\n');
}
