/**
 * The portal's language for the request being rendered: German by default, English when
 * the switch's cookie or `Accept-Language` asks for it. Held for the request in an
 * AsyncLocalStorage, so a page component reads its strings without a language passed
 * through every prop; outside a request (a unit test of a helper) it is the default.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export const LANGUAGES = ['de', 'en'] as const;
export type Language = (typeof LANGUAGES)[number];
const DEFAULT_LANGUAGE: Language = 'de';

/** The cookie the header's switch writes (path /portal, a year). */
export const LANGUAGE_COOKIE = 'fleet_lang';

/** Dates and numbers per language; English as written in Britain: "26 Nov 2026, 12:33", day first, 24 hours. */
export const LOCALES: Record<Language, string> = { de: 'de-DE', en: 'en-GB' };

export const isLanguage = (value: string | undefined): value is Language =>
  (LANGUAGES as readonly string[]).includes(value ?? '');

/**
 * The switch's choice when the cookie holds one, else the first language of
 * `Accept-Language` (by its q-values, `en-US` counting as `en`) that the portal has, else
 * German.
 */
export function pickLanguage(cookie: string | undefined, acceptLanguage: string | undefined): Language {
  if (isLanguage(cookie)) return cookie;
  const wanted = (acceptLanguage ?? '')
    .split(',')
    .map((part, index) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { primary: tag.trim().toLowerCase().split('-')[0] ?? '', q: q === undefined ? 1 : Number(q), index };
    })
    .filter((w) => w.q > 0 && !Number.isNaN(w.q))
    .sort((a, b) => b.q - a.q || a.index - b.index);
  return wanted.map((w) => w.primary).find(isLanguage) ?? DEFAULT_LANGUAGE;
}

interface Rendering {
  language: Language;
  /** The page's own path and query, for the switch's way back. */
  path: string;
}

const storage = new AsyncLocalStorage<Rendering>();

export function withLanguage<T>(rendering: Rendering, run: () => T): T {
  return storage.run(rendering, run);
}

export function currentLanguage(): Language {
  return storage.getStore()?.language ?? DEFAULT_LANGUAGE;
}

export function currentPath(): string {
  return storage.getStore()?.path ?? '/portal';
}
