/**
 * The domain's refusals in the page's language: by the API's error code, and for a
 * request that failed validation by the fields it names. A refusal the catalog has no
 * words for keeps the API's own message; one the portal already worded stays as it is.
 */
import type { ApiError } from '../http/errors.ts';
import { t } from './i18n/index.ts';

const worded = new WeakSet<ApiError>();

/** A refusal whose message the portal wrote in the page's language: shown as it is. */
export function portalWorded(err: ApiError): ApiError {
  worded.add(err);
  return err;
}

/**
 * The fields a validation refusal names (`details: [{ path: [field, ...] }]`), each as the
 * catalog words it: by its whole path ("parameters.script") where it has words for that,
 * else by its first field.
 */
function fieldsOf(details: unknown, worded: Record<string, string>): string[] {
  if (!Array.isArray(details)) return [];
  return details.flatMap((d) => {
    const path = (d as { path?: unknown[] })?.path ?? [];
    const whole = path.map(String).join('.');
    if (path.length > 1 && Object.hasOwn(worded, whole)) return [whole];
    const first = path[0];
    return typeof first === 'string' ? [first] : [];
  });
}

/** What the portal shows for a refusal (a flash or an error page). */
export function refusalText(err: ApiError): string {
  if (worded.has(err)) return err.message;
  const { refusals, errors } = t().common;
  if (err.code === 'invalid_request') {
    const fields = [...new Set(fieldsOf(err.details, refusals.fields))];
    const texts = fields.map((f) => (Object.hasOwn(refusals.fields, f) ? refusals.fields[f] : undefined));
    if (fields.length === 0 || texts.some((x) => x === undefined)) return err.message;
    return errors.invalidInput(texts.join(' '));
  }
  return Object.hasOwn(refusals.codes, err.code) ? refusals.codes[err.code]! : err.message;
}
