/** The portal's HTTP pieces: rendering a page, POST → 303 → GET with a flash message, form fields. */
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { JSX } from 'hono/jsx/jsx-runtime';
import { ApiError } from '../http/errors.ts';
import { t } from './i18n/index.ts';
import { refusalText } from './refusals.ts';
import type { Flash } from './layout.tsx';

const FLASH_COOKIE = 'fleet_flash';

type Ctx = Context<any>;

export async function render(c: Ctx, node: JSX.Element, status: ContentfulStatusCode = 200) {
  c.header('Cache-Control', 'no-store');
  return c.html(`<!DOCTYPE html>${await node.toString()}`, status);
}

/** The flash message of the previous POST, shown once. */
export function takeFlash(c: Ctx): Flash | null {
  const raw = getCookie(c, FLASH_COOKIE);
  if (raw === undefined) return null;
  deleteCookie(c, FLASH_COOKIE, { path: '/portal' });
  const kind = raw.startsWith('error:') ? 'error' : 'ok';
  return { kind, text: raw.slice(raw.indexOf(':') + 1).slice(0, 500) };
}

export function redirectWith(c: Ctx, location: string, flash?: Flash) {
  if (flash) {
    setCookie(c, FLASH_COOKIE, `${flash.kind}:${flash.text}`, {
      path: '/portal',
      httpOnly: true,
      sameSite: 'Strict',
      maxAge: 60,
    });
  }
  return c.redirect(location, 303);
}

/** The form's fields as strings (a repeated field keeps its last value; files are ignored). */
export async function formFields(c: Ctx): Promise<Record<string, string>> {
  const body = await c.req.parseBody();
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries(body)) if (typeof value === 'string') fields[name] = value;
  return fields;
}

/**
 * Runs a write and redirects back with its outcome (the success's text may name what it
 * wrote). A refusal by a rule of the domain
 * (400, 409, 422) goes back with the message as an error; 403, 404 and the rest are the
 * error page's (the portal's onError).
 */
export async function writeAndRedirect<T>(
  c: Ctx,
  back: string,
  success: string | ((result: T) => string),
  write: () => Promise<T>,
) {
  let result: T;
  try {
    result = await write();
  } catch (err) {
    if (err instanceof ApiError && [400, 409, 413, 422].includes(err.status)) {
      return redirectWith(c, back, { kind: 'error', text: refusalText(err) });
    }
    throw err;
  }
  return redirectWith(c, back, { kind: 'ok', text: typeof success === 'string' ? success : success(result) });
}

/** A zod failure as the portal shows it: the fields and what is wrong with them. */
export function invalidInput(error: { issues: Array<{ path: PropertyKey[]; message: string }> }): ApiError {
  const { errors } = t().common;
  const text = error.issues.map((i) => `${i.path.join('.') || errors.inputField}: ${i.message}`).join('; ');
  // The fields go along, so the refusal reads in the page's words where the catalog has them.
  const details = error.issues.map((i) => ({ path: i.path, message: i.message }));
  return new ApiError('invalid_request', errors.invalidInput(text), { details });
}

/** The portal page the form came from (a path under /portal/ of this site only), else the fallback. */
export function safeBack(back: string | undefined, fallback: string): string {
  return back !== undefined && /^\/portal\/[A-Za-z0-9/_-]*$/.test(back) ? back : fallback;
}
