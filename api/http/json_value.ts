/**
 * Free-form JSON in request bodies (selection `optionen`, report `detail`, `hardware`): the
 * one schema for values whose shape the API does not know, held to what the rest of the
 * stack can carry. JSON.parse takes any nesting, but JSON.stringify (postgres.js
 * serializing a jsonb parameter, the hardware size check, the response) overflows the call
 * stack at a few thousand levels, about 20 KB of `[`; and a lone UTF-16 surrogate
 * (`"\ud800"`, valid JSON) is refused by PostgreSQL's jsonb. Both must be a 400. The check
 * walks the value with an explicit stack, so it cannot overflow itself, and runs in the
 * validator, before anything serializes the value.
 */
import { Buffer } from 'node:buffer';
import { z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { ApiError } from './errors.ts';

/** Deepest nesting of objects and arrays accepted; the value itself is level 1. */
export const MAX_JSON_DEPTH = 64;

const NOT_WELL_FORMED = 'is not well-formed Unicode: it contains a lone UTF-16 surrogate';

/**
 * True when the string has no lone surrogate, so it has a UTF-8 form. (The built-in
 * String.prototype.isWellFormed of Node 20 and Deno; the compiler's lib is ES2023.)
 */
function isWellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

interface JsonProblem {
  /** Where, relative to the value: object keys and array indexes. */
  path: Array<string | number>;
  message: string;
}

interface Node {
  value: unknown;
  depth: number;
  key: string | number | null;
  parent: Node | null;
}

/**
 * The first problem of a parsed JSON value in document order (too deep, a string or key
 * that is not well-formed), or null. Iterative on purpose: nesting is what it guards against.
 */
function findJsonProblem(value: unknown, maxDepth: number = MAX_JSON_DEPTH): JsonProblem | null {
  const stack: Node[] = [{ value, depth: 0, key: null, parent: null }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const v = node.value;
    if (typeof v === 'string') {
      if (!isWellFormed(v)) return { path: pathOf(node), message: `this string ${NOT_WELL_FORMED}` };
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    const depth = node.depth + 1;
    if (depth > maxDepth)
      return { path: pathOf(node), message: `nested deeper than ${maxDepth} levels of objects and arrays` };
    // Children are pushed last-first, so they are visited in document order.
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], depth, key: i, parent: node });
      continue;
    }
    const keys = Object.keys(v);
    // The key itself is not echoed (it may be anything); the path names its object.
    if (!keys.every(isWellFormed)) return { path: pathOf(node), message: `a key of this object ${NOT_WELL_FORMED}` };
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      stack.push({ value: (v as Record<string, unknown>)[key], depth, key, parent: node });
    }
  }
  return null;
}

function pathOf(node: Node): Array<string | number> {
  const path: Array<string | number> = [];
  for (let n: Node | null = node; n !== null && n.key !== null; n = n.parent) path.push(n.key);
  return path.reverse();
}

export interface JsonValueOptions {
  /** Largest size accepted, as UTF-8 JSON text (measured only once the value is known to be shallow). */
  maxBytes?: number;
}

function refineJson(options: JsonValueOptions) {
  return (value: unknown, ctx: z.RefinementCtx) => {
    const problem = findJsonProblem(value);
    if (problem) {
      ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path, input: value });
      return;
    }
    if (options.maxBytes !== undefined && Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8') > options.maxBytes) {
      ctx.addIssue({ code: 'custom', message: `must be at most ${options.maxBytes} bytes as JSON`, input: value });
    }
  };
}

const rules = `nested at most ${MAX_JSON_DEPTH} levels deep, strings and keys well-formed Unicode (no lone UTF-16 surrogates)`;

/** Any JSON value, within the limits above. */
export function jsonValue(options: JsonValueOptions = {}) {
  return z
    .unknown()
    .superRefine(refineJson(options))
    .openapi({ description: `Any JSON value, ${rules}.` });
}

/** A JSON object with any keys and values, within the limits above. */
export function jsonObject(options: JsonValueOptions = {}) {
  return z
    .record(z.string(), z.unknown())
    .superRefine(refineJson(options))
    .openapi({ type: 'object', additionalProperties: true, description: `A JSON object, ${rules}.` });
}

/** Plain text that PostgreSQL can store as it was sent (no lone surrogates). */
export function wellFormedText() {
  return z.string().refine(isWellFormed, { message: NOT_WELL_FORMED });
}

/**
 * Every JSON body of every route (defineRoute puts this after a route's own middleware):
 * a string or key with a lone surrogate anywhere is 400 `invalid_request`, naming the
 * field, before the body's schema runs. One check for all bodies, so no schema can forget
 * it: PostgreSQL's jsonb refuses such a string (a 500 in an audit row) and its text stores
 * it as U+FFFD (not what was sent). Malformed JSON is left to the route's validator.
 */
export const wellFormedJsonBody: MiddlewareHandler = async (c, next) => {
  if (!c.req.header('content-type')?.toLowerCase().includes('json')) return next();
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    return next();
  }
  requireWellFormedJson(body);
  return next();
};

/** The rule of `wellFormedJsonBody` for a body its handler parses itself (the check-in). */
export function requireWellFormedJson(body: unknown): void {
  // Only well-formedness here: the depth of free-form values is their schemas' to limit.
  const problem = findJsonProblem(body, Number.POSITIVE_INFINITY);
  if (problem !== null) {
    const path = problem.path.map(String);
    const where = path.length > 0 ? `${path.join('.')}: ` : '';
    throw new ApiError('invalid_request', `the request body is not valid: ${where}${problem.message}`, {
      details: [{ path, message: problem.message }],
    });
  }
}
