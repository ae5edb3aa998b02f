/**
 * What a page module uses of the languages: `t()`, the catalog of the request's language,
 * and the formats of dates and numbers in it. Page code holds no text of its own.
 */
import { type Catalog, catalogs } from './catalog.ts';
import { currentLanguage, LOCALES } from './language.ts';

export type { Catalog } from './catalog.ts';
export { currentLanguage, currentPath } from './language.ts';

/** The catalog of the language this request is rendered in. */
export function t(): Catalog {
  return catalogs[currentLanguage()];
}

const dateTimes = new Map<string, Intl.DateTimeFormat>();
const numbers = new Map<string, Intl.NumberFormat>();

function dateTimeFormat(options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const locale = LOCALES[currentLanguage()];
  const key = `${locale}|${JSON.stringify(options)}`;
  let format = dateTimes.get(key);
  if (format === undefined) {
    format = new Intl.DateTimeFormat(locale, { ...options, timeZone: 'UTC' });
    dateTimes.set(key, format);
  }
  return format;
}

/** A moment to the minute, in UTC as every time of the portal: "26.11.2026, 12:33 UTC". "–" for none. */
export function formatTime(value: Date | string | null | undefined): string {
  if (value === null || value === undefined) return t().common.time.never;
  const at = value instanceof Date ? value : new Date(value);
  return `${dateTimeFormat({ dateStyle: 'medium', timeStyle: 'short' }).format(at)} UTC`;
}

/** A moment to the second, for a hover title: "26.11.2026, 12:33:07 UTC". */
export function formatExactTime(at: Date): string {
  return `${dateTimeFormat({ dateStyle: 'medium', timeStyle: 'medium' }).format(at)} UTC`;
}

/** A number with the language's grouping and decimal mark ("12.345,6" or "12,345.6"). */
export function formatNumber(n: number, options: Intl.NumberFormatOptions = {}): string {
  const locale = LOCALES[currentLanguage()];
  const key = `${locale}|${JSON.stringify(options)}`;
  let format = numbers.get(key);
  if (format === undefined) {
    format = new Intl.NumberFormat(locale, options);
    numbers.set(key, format);
  }
  return format.format(n);
}

/** A size in decimal units with one decimal at most ("1,5 GB"). */
export function formatBytes(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'] as const;
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${formatNumber(value, { maximumFractionDigits: 1 })} ${units[unit]}`;
}
