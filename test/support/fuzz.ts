/**
 * A seeded fuzzer over the service's own OpenAPI document: for every operation, every
 * parameter and every body field, inputs the schema refuses (wrong types, lengths one past
 * a bound, lone surrogates, huge numbers, deep nesting, unknown fields and parameters,
 * malformed JSON, random ids and another organization's) and odd inputs it may accept
 * (bounds themselves, -0, 1e308, random filters, odd headers). Every answer must be below
 * 500 and every 4xx the registry's error body with its code's status; the inputs that must
 * be refused are sent in one batch per operation with a whole-database fingerprint around
 * it, so a refused request that wrote anything is found. Same seed, same document, same
 * inputs (only the fixture's ids differ): the seed is all a failure needs to be replayed.
 */
import { ErrorBody, type ErrorCode, errorCodes, statusesOf } from '../../api/http/errors.ts';
import type { Sql } from '../../api/db/client.ts';
import { databaseFingerprint, fillPath, type FingerprintIgnoring, type TenantFixture } from './access.ts';
import { TEMPLATES } from './activation.ts';

/** mulberry32: small, fast and good enough to pick inputs; no dependency. */
class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  /** A version 4 UUID drawn from the generator, so a replay sends the same ones. */
  uuid(): string {
    const hex = Array.from({ length: 32 }, () => this.int(16).toString(16));
    hex[12] = '4';
    hex[16] = (8 + this.int(4)).toString(16);
    const h = hex.join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}

/** The seed of this run: `FUZZ_SEED` to replay one, else a fresh one. */
export function fuzzSeed(env: string | undefined): number {
  if (env === undefined || env === '') return Math.floor(Math.random() * 2 ** 32);
  const seed = Number(env);
  if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) {
    throw new Error(`FUZZ_SEED must be an integer from 0 to 4294967295, not ${JSON.stringify(env)}`);
  }
  return seed;
}

type Schema = Record<string, any>;
type FieldPath = Array<string | number>;

/** JSON text spliced into a body as is: numbers JSON.stringify cannot write, deep nesting. */
class Raw {
  constructor(readonly text: string) {}
}

function toJson(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

function describeValue(value: unknown): string {
  const text = value === undefined ? 'undefined' : toJson(value);
  return text.length > 40 ? `${text.slice(0, 37)}…(${text.length})` : text;
}

interface Parameter {
  in: string;
  name: string;
  schema: Schema;
}

interface FuzzOperation {
  method: string;
  path: string;
  callers: string[];
  parameters: Parameter[];
  body?: Schema;
}

interface FuzzRequest {
  url: string;
  method: string;
  token: string | null;
  /** JSON text; undefined sends no body. */
  body?: string;
  headers?: Record<string, string>;
}

interface Case {
  /** What was sent, for the report: the input's kind, where, the value. */
  label: string;
  credential: string;
  /** Whether the schema (or the access rules) refuse it, so it goes into the fingerprinted batch. */
  mustRefuse: boolean;
  request: FuzzRequest;
}

interface FuzzTarget {
  request(url: string, init: RequestInit): Response | Promise<Response>;
}

export interface FuzzOptions {
  app: FuzzTarget;
  sql: Sql;
  doc: any;
  seed: number;
  own: TenantFixture;
  other: TenantFixture;
  adminToken: string;
  /** Cases per operation beyond one per parameter and field, in each phase. */
  extraRefused: number;
  extraFree: number;
  /** Values of body fields by name that get a request past its first check, e.g. the activation `code`. */
  known?: Record<string, string>;
  /** Only the operations this accepts (the self-test fuzzes its one route). */
  only?: (op: FuzzOperation) => boolean;
  /**
   * Writes what accepted requests left pending (the check-ins' batched heartbeats), so a
   * batch on a timer never lands between two fingerprints and passes for a refused write.
   */
  settle?: () => Promise<void>;
}

export interface FuzzReport {
  requests: number;
  operations: number;
  /** One line per problem: what answered how to which input. */
  findings: string[];
  /** How many answers had each status. */
  statuses: Record<number, number>;
}

/** The operations of the document with their parameters and body schemas. */
function fuzzOperations(doc: any): FuzzOperation[] {
  const operations: FuzzOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(item)) {
      operations.push({
        method,
        path,
        callers: op['x-callers'] ?? [],
        parameters: (op.parameters ?? []) as Parameter[],
        body: op.requestBody?.content?.['application/json']?.schema,
      });
    }
  }
  return operations;
}

/**
 * Writes a refused request makes by design: a key's use moves its `last_used_at` (at most
 * once a minute) before its role is checked, and a failed activation is counted against
 * its client for the rate limit.
 */
const BOOKKEEPING: FingerprintIgnoring = {
  tables: ['activation_failure_counts'],
  columns: { api_keys: ['last_used_at'] },
};

/** Runs the fuzzer; the findings are empty when the service held. */
export async function fuzz(options: FuzzOptions): Promise<FuzzReport> {
  const rng = new Rng(options.seed);
  const gen = new Generator(options, rng);
  const findings: string[] = [];
  const statuses: Record<number, number> = {};
  let requests = 0;
  const operations = fuzzOperations(options.doc).filter(options.only ?? (() => true));
  // Operations that end or take away what the fixture holds go last, so the others are
  // fuzzed against live resources (the free phase's valid requests do succeed).
  // Archiving a device last of all: it ends every change of the device.
  const rank = (op: FuzzOperation) => {
    if (op.path.endsWith('/archive')) return 4;
    if (op.path.endsWith('/deprovision')) return 3;
    if (op.path.endsWith('/reprovision')) return 2;
    return op.method === 'delete' || /\/(revoke|rotate)$/.test(op.path) ? 1 : 0;
  };
  const ordered = [...operations].sort((a, b) => rank(a) - rank(b));
  const refusedBatches = ordered.map((op) => ({ op, cases: gen.refused(op) }));
  const freeBatches = ordered.map((op) => ({ op, cases: gen.free(op) }));

  const send = async (op: FuzzOperation, c: Case): Promise<number> => {
    requests++;
    const where = `${op.method.toUpperCase()} ${op.path} [${c.label}] as ${c.credential}`;
    let status: number;
    let text: string;
    let contentType: string;
    try {
      const headers: Record<string, string> = { ...c.request.headers };
      if (c.request.token !== null) headers.authorization = `Bearer ${c.request.token}`;
      if (c.request.body !== undefined) headers['content-type'] ??= 'application/json';
      const res = await options.app.request(c.request.url, {
        method: c.request.method,
        headers,
        body: c.request.body,
      });
      status = res.status;
      text = await res.text();
      contentType = res.headers.get('content-type') ?? '';
    } catch (err) {
      findings.push(`${where}: the app threw ${String(err)}`);
      return 599;
    }
    statuses[status] = (statuses[status] ?? 0) + 1;
    const problem = answerProblem(status, text, contentType);
    if (problem) findings.push(`${where}: ${problem}`);
    return status;
  };

  // Everything the schema refuses, one batch per operation inside a fingerprint.
  for (const { op, cases } of refusedBatches) {
    await options.settle?.();
    const before = await databaseFingerprint(options.sql, BOOKKEEPING);
    let accepted = 0;
    for (const c of cases) {
      const status = await send(op, c);
      if (status < 400) {
        accepted++;
        findings.push(`${op.method.toUpperCase()} ${op.path} [${c.label}] as ${c.credential}: ${status}, not refused`);
      }
    }
    // An accepted request may write; that is reported above, and the batch proves nothing more.
    if (accepted === 0) {
      await options.settle?.();
      const after = await databaseFingerprint(options.sql, BOOKKEEPING);
      if (after !== before) {
        findings.push(
          `${op.method.toUpperCase()} ${op.path}: a refused request changed ${changedTables(before, after)}`,
        );
      }
    }
  }
  // What the schema may accept: only the answers are checked.
  for (const { op, cases } of freeBatches) {
    for (const c of cases) await send(op, c);
  }
  return { requests, operations: operations.length, findings, statuses };
}

/** The tables two fingerprints disagree on. */
function changedTables(before: string, after: string): string {
  const parts = (fp: string) => new Map(fp.split(';').map((p) => p.split('=') as [string, string]));
  const a = parts(before);
  const b = parts(after);
  return [...b]
    .filter(([table, h]) => a.get(table) !== h)
    .map(([table]) => table)
    .join(', ');
}

/** What is wrong with an answer, or null: a 5xx, or a 4xx that is not the registry's error body. */
export function answerProblem(status: number, text: string, contentType: string): string | null {
  if (status >= 500) return `${status} ${text.slice(0, 200)}`;
  if (status < 400) return null;
  if (!contentType.includes('application/json')) return `${status} with ${contentType || 'no content type'}`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `${status} with a body that is not JSON: ${text.slice(0, 80)}`;
  }
  const parsed = ErrorBody.strict().safeParse(body);
  if (!parsed.success) return `${status} with a body that is not the error shape: ${text.slice(0, 200)}`;
  const code = parsed.data.error as ErrorCode;
  if (!errorCodes.includes(code)) return `${status} with an unregistered code ${code}`;
  if (!(statusesOf(code) as readonly number[]).includes(status)) {
    return `${status} with code ${code}, which is registered as ${statusesOf(code).join(' or ')}`;
  }
  return null;
}

/** Query values and path segments as they go on the wire; `%ED%A0%80` is a surrogate's bytes. */
const PATH_JUNK = [
  'abc',
  '0',
  '-0',
  'NaN',
  '1e308',
  '9223372036854775808',
  '%ED%A0%80',
  '%00',
  '%FF',
  'null',
  '%20',
  "'%20or%201=1--",
  'x'.repeat(300),
];

const MALFORMED_JSON = [
  '{',
  '{"a":',
  '[1,',
  'nul',
  '{"a":1,}',
  "{'a':1}",
  '{"a":1}{"b":2}',
  '"unterminated',
  '\u0000',
  '{"a":0x10}',
];
const NOT_AN_OBJECT = ['[]', '"x"', '1', 'null', 'true', '[{}]'];
const HUGE = ['1e308', '-1e308', '9223372036854775808', '-9223372036854775809', '1e400', '4294967296', '2147483648'];

function deep(depth: number, open = '[', close = ']'): Raw {
  if (open === '{') return new Raw('{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1));
  return new Raw(open.repeat(depth) + close.repeat(depth));
}

/** The strings that fit the schema's length and pattern (an odd value is worth sending only if valid). */
function matching(s: Schema, values: string[]): string[] {
  let pattern: RegExp | undefined;
  try {
    pattern = s.pattern === undefined ? undefined : new RegExp(s.pattern, 'u');
  } catch {
    return [];
  }
  return values.filter(
    (v) =>
      (s.minLength === undefined || v.length >= s.minLength) &&
      (s.maxLength === undefined || v.length <= s.maxLength) &&
      (pattern === undefined || pattern.test(v)),
  );
}

/** Builds the cases of each operation from its schemas. */
class Generator {
  constructor(
    private readonly o: FuzzOptions,
    private readonly rng: Rng,
  ) {}

  private deref(schema: Schema | undefined): Schema {
    let s = schema ?? {};
    while (s.$ref) s = this.o.doc.components.schemas[String(s.$ref).split('/').pop()!] ?? {};
    return s;
  }

  /** The schema's alternatives without `null` (3.1 spells nullable as a type list or anyOf). */
  private branches(schema: Schema | undefined): Schema[] {
    const s = this.deref(schema);
    const union = s.anyOf ?? s.oneOf;
    if (union) return (union as Schema[]).flatMap((b) => this.branches(b));
    if (Array.isArray(s.type))
      return s.type.filter((t: string) => t !== 'null').map((type: string) => ({ ...s, type }));
    return s.type === 'null' ? [] : [s];
  }

  private nullable(schema: Schema | undefined): boolean {
    const s = this.deref(schema);
    const union = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
    if (union) return union.some((b) => this.nullable(b));
    return s.type === 'null' || (Array.isArray(s.type) && s.type.includes('null')) || s.nullable === true;
  }

  private typesOf(schema: Schema | undefined): Set<string> {
    const types = new Set<string>();
    for (const b of this.branches(schema)) {
      if (b.type) types.add(b.type === 'integer' ? 'number' : b.type);
      else if (b.properties) types.add('object');
      else types.add('any');
    }
    return types;
  }

  /** The organization resource an id field or parameter names, by its name. */
  private idFor(name: string, f: TenantFixture): string | undefined {
    const byName: Record<string, string> = {
      device_id: f.deviceId,
      target_id: f.deviceId,
      org_unit_id: f.orgUnitId,
      oe_id: f.orgUnitId,
      parent_id: f.orgUnitId,
      group_id: f.groupId,
      organization_id: f.organizationId,
      template_id: TEMPLATES.debianStandard,
    };
    return byName[name];
  }

  /** A value the schema describes: its example, its first enum value, the fixture's id. */
  private sample(schema: Schema | undefined, name: string, depth = 0): unknown {
    const s = this.branches(schema)[0] ?? {};
    const known = this.o.known?.[name];
    if (known !== undefined) return known;
    if (s.format === 'uuid') return this.idFor(name, this.o.own) ?? s.example ?? this.rng.uuid();
    if (s.example !== undefined) return s.example;
    if (s.enum) return s.enum[0];
    if (s.type === 'object' || s.properties) {
      const out: Record<string, unknown> = {};
      if (depth < 6) for (const key of s.required ?? []) out[key] = this.sample(s.properties?.[key], key, depth + 1);
      return out;
    }
    if (s.type === 'array') {
      const n = Math.max(1, s.minItems ?? 1);
      return depth < 6 ? Array.from({ length: n }, () => this.sample(s.items, name, depth + 1)) : [];
    }
    if (s.type === 'integer' || s.type === 'number') return s.minimum ?? 1;
    if (s.type === 'boolean') return true;
    if (s.type === 'string') {
      if (s.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
      if (s.format === 'uri') return 'https://hooks.example.com/fuzz';
      return 'x'.repeat(Math.max(1, s.minLength ?? 1));
    }
    return {};
  }

  /** Every field of a body schema (through objects and the first item of arrays), with its schema. */
  private fields(
    schema: Schema | undefined,
    path: FieldPath = [],
    depth = 0,
  ): Array<{ path: FieldPath; schema: Schema }> {
    if (depth > 5) return [];
    const out: Array<{ path: FieldPath; schema: Schema }> = [];
    for (const b of this.branches(schema)) {
      if (b.properties) {
        for (const [key, sub] of Object.entries(b.properties as Record<string, Schema>)) {
          out.push({ path: [...path, key], schema: sub });
          out.push(...this.fields(sub, [...path, key], depth + 1));
        }
      } else if (b.type === 'array' && b.items) {
        out.push(...this.fields(b.items, [...path, 0], depth + 1));
        if (this.branches(b.items).every((i) => !i.properties && i.type !== 'array')) {
          out.push({ path: [...path, 0], schema: b.items });
        }
      }
    }
    return out;
  }

  private baseBody(op: FuzzOperation): Record<string, unknown> {
    return this.sample(op.body, '') as Record<string, unknown>;
  }

  /** The schema of a field of an object, or of an array's items. */
  private child(schema: Schema | undefined, key: string | number): Schema | undefined {
    for (const b of this.branches(schema)) {
      if (typeof key === 'number' && b.type === 'array') return b.items;
      if (typeof key === 'string' && b.properties?.[key]) return b.properties[key];
    }
    return undefined;
  }

  /**
   * The body with `value` at `path` (`undefined` removes the field); an object or array on
   * the way that the body lacks is made from its schema, so only the one field is wrong.
   */
  private withField(body: unknown, path: FieldPath, value: unknown, schema: Schema | undefined): unknown {
    if (path.length === 0) return value;
    const [head, ...rest] = path;
    const sub = this.child(schema, head!);
    if (typeof head === 'number') {
      const list = Array.isArray(body) ? [...body] : [];
      list[head] = this.withField(list[head] ?? this.sample(sub, ''), rest, value, sub);
      return list;
    }
    const obj: Record<string, unknown> =
      body !== null && typeof body === 'object' && !Array.isArray(body) ? { ...(body as object) } : {};
    if (value === undefined && rest.length === 0) delete obj[head!];
    else obj[head!] = this.withField(obj[head!] ?? this.sample(sub, head!), rest, value, sub);
    return obj;
  }

  private credentials(op: FuzzOperation): Array<{ name: string; token: string | null }> {
    const callers = new Set(op.callers);
    if (callers.has('anyone') || callers.has('installer')) return [{ name: 'none', token: null }];
    if (callers.has('agent')) return [{ name: 'agent', token: this.o.own.agentSecret }];
    const out: Array<{ name: string; token: string | null }> = [];
    if (callers.has('operator')) out.push({ name: 'operator', token: this.o.adminToken });
    if (callers.has('admin')) out.push({ name: 'admin', token: this.o.own.adminKey });
    if (callers.has('viewer')) out.push({ name: 'viewer', token: this.o.own.viewerKey });
    return out;
  }

  /** The path's parameter values for a fixture (an unknown parameter gets a random id). */
  private pathValues(op: FuzzOperation, f: TenantFixture): Record<string, string> {
    const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    let filled: string[] | undefined;
    try {
      filled = fillPath({ method: op.method, path: op.path, callers: op.callers }, f).url.split('/');
    } catch {
      filled = undefined;
    }
    const segments = op.path.split('/');
    const values: Record<string, string> = {};
    for (const name of names) {
      const i = segments.indexOf(`{${name}}`);
      values[name] = filled?.[i] ?? this.rng.uuid();
    }
    return values;
  }

  private url(op: FuzzOperation, path: Record<string, string>, query: Array<[string, string]>): string {
    const filled = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => path[name]!);
    return query.length === 0 ? filled : `${filled}?${query.map(([k, v]) => `${k}=${v}`).join('&')}`;
  }

  private orgScoped(op: FuzzOperation): boolean {
    try {
      return fillPath({ method: op.method, path: op.path, callers: op.callers }, this.o.own).orgScoped;
    } catch {
      return false;
    }
  }

  /** A case from the base request with some parts replaced. */
  private make(
    op: FuzzOperation,
    label: string,
    mustRefuse: boolean,
    change: {
      path?: Record<string, string>;
      query?: Array<[string, string]>;
      body?: string | null;
      credential?: { name: string; token: string | null };
      headers?: Record<string, string>;
    } = {},
  ): Case {
    const credential = change.credential ?? this.rng.pick(this.credentials(op));
    const path = { ...this.pathValues(op, this.o.own), ...change.path };
    const body = change.body === null ? undefined : (change.body ?? (op.body ? toJson(this.baseBody(op)) : undefined));
    return {
      label,
      credential: credential.name,
      mustRefuse,
      request: {
        url: this.url(op, path, change.query ?? []),
        method: op.method.toUpperCase(),
        token: credential.token,
        body,
        headers: change.headers,
      },
    };
  }

  /** A value of the wrong type for the schema, and whether the schema refuses it for sure. */
  private wrongType(schema: Schema): unknown | undefined {
    const types = this.typesOf(schema);
    if (types.has('any')) return undefined;
    const candidates: unknown[] = [];
    if (!types.has('string')) candidates.push('1', 'NaN', 'true', '');
    if (!types.has('number')) candidates.push(1, -0.5, new Raw('1e308'), new Raw('-0'));
    if (!types.has('boolean')) candidates.push(false);
    if (!types.has('object')) candidates.push({ a: 1 }, {});
    if (!types.has('array')) candidates.push([], ['x']);
    if (!this.nullable(schema)) candidates.push(null);
    return candidates.length ? this.rng.pick(candidates) : undefined;
  }

  /** Values one past a bound the schema states. */
  private outOfBounds(schema: Schema): unknown[] {
    const out: unknown[] = [];
    for (const s of this.branches(schema)) {
      if (s.type === 'string') {
        if (s.minLength > 0) out.push('x'.repeat(s.minLength - 1));
        if (s.maxLength !== undefined) out.push('x'.repeat(s.maxLength + 1));
      }
      if (s.type === 'integer' || s.type === 'number') {
        if (s.minimum !== undefined) out.push(s.minimum - 1);
        if (s.exclusiveMinimum !== undefined) out.push(s.exclusiveMinimum);
        if (s.maximum !== undefined) out.push(s.maximum + 1);
        if (s.exclusiveMaximum !== undefined) out.push(s.exclusiveMaximum);
        if (s.type === 'integer') out.push(1.5);
      }
      if (s.type === 'array') {
        if (s.minItems > 0) out.push([]);
        if (s.maxItems !== undefined) out.push(Array.from({ length: s.maxItems + 1 }, () => this.sample(s.items, '')));
      }
      if (s.enum) out.push(`${String(s.enum[0])}x`);
    }
    return out;
  }

  /** Values at each bound the schema states. */
  private atBounds(schema: Schema): unknown[] {
    const out: unknown[] = [];
    for (const s of this.branches(schema)) {
      if (s.type === 'string' && s.format === undefined && !s.enum) {
        if (s.minLength !== undefined) out.push(...matching(s, ['x'.repeat(s.minLength)]));
        if (s.maxLength !== undefined) out.push(...matching(s, ['x'.repeat(s.maxLength)]));
      }
      if (s.type === 'integer' || s.type === 'number') {
        if (s.minimum !== undefined) out.push(s.minimum);
        if (s.maximum !== undefined) out.push(s.maximum);
      }
      if (s.type === 'array') {
        if (s.minItems !== undefined) out.push(Array.from({ length: s.minItems }, () => this.sample(s.items, '')));
        if (s.maxItems !== undefined) out.push(Array.from({ length: s.maxItems }, () => this.sample(s.items, '')));
      }
    }
    return out;
  }

  /** Values at a bound, and odd ones the schema may well accept. */
  private inBoundsOdd(schema: Schema, name: string): unknown[] {
    const out: unknown[] = [];
    for (const s of this.branches(schema)) {
      if (s.type === 'string') {
        if (s.format === undefined && !s.enum) {
          const odd = ['NaN', 'ß\u{1F600}\u0301', "'; select 1; --", '%_\\', ' x ', 'a\u200bb', 'x.y', 'X-1'];
          if (s.maxLength !== undefined) odd.push('ä'.repeat(s.maxLength), '\u{1F600}'.repeat(s.maxLength / 2));
          out.push(...matching(s, odd));
        }
        if (s.format === 'uuid') out.push(this.rng.uuid(), this.idFor(name, this.o.other) ?? this.o.other.deviceId);
      }
      if (s.type === 'integer' || s.type === 'number') {
        out.push(new Raw('-0'), new Raw('0.0'), new Raw('1E2'));
        if (s.maximum === undefined) out.push(...HUGE.map((h) => new Raw(h)));
      }
      if ((s.type === 'object' && !s.properties) || (!s.type && !s.properties)) {
        // Free-form JSON: nesting up to the limit, odd keys.
        out.push(deep(60), deep(60, '{'), { '': 1, __proto__x: { constructor: 1 } }, { a: new Raw('1e400') });
      }
    }
    return out;
  }

  private fieldName(path: FieldPath): string {
    return [...path].reverse().find((p): p is string => typeof p === 'string') ?? '';
  }

  private isIdField(schema: Schema): boolean {
    return this.branches(schema).some((s) => s.format === 'uuid');
  }

  /** The inputs that must be refused: at least one per parameter and field, then random ones. */
  refused(op: FuzzOperation): Case[] {
    const cases: Case[] = [];
    const perTarget: Array<() => Case | undefined> = [];
    const callers = new Set(op.callers);
    const open = callers.has('anyone') || callers.has('installer');
    const pathNames = op.parameters.filter((p) => p.in === 'path');
    const queryParams = op.parameters.filter((p) => p.in === 'query');

    for (const p of pathNames) {
      const uuid = this.isIdField(p.schema);
      perTarget.push(() => {
        const roll = this.rng.int(3);
        if (roll === 0 && uuid) {
          return this.make(op, `path ${p.name} random id`, true, { path: { [p.name]: this.rng.uuid() } });
        }
        const otherId = this.pathValues(op, this.o.other)[p.name];
        const ownId = this.pathValues(op, this.o.own)[p.name];
        if (roll === 1 && uuid && callers.has('admin') && otherId !== ownId && this.orgScoped(op)) {
          // Another organization's id with this organization's key; the operator may name it.
          const credential = this.rng.pick(this.credentials(op).filter((c) => c.name !== 'operator'));
          return this.make(op, `path ${p.name} of another organization`, true, {
            path: { [p.name]: otherId! },
            credential,
          });
        }
        const junk = this.rng.pick(PATH_JUNK);
        return this.make(op, `path ${p.name}=${describeValue(junk)}`, true, { path: { [p.name]: junk } });
      });
    }
    for (const p of queryParams) {
      const values = this.queryRefused(p);
      if (values.length === 0) continue;
      perTarget.push(() => {
        const v = this.rng.pick(values);
        return this.make(op, `query ${p.name}=${describeValue(v)}`, true, { query: [[p.name, v]] });
      });
    }
    perTarget.push(() => {
      const name = this.rng.pick(['zz_unknown', 'limit', 'organization_id', 'x%ED%A0%80', '__proto__']);
      if (queryParams.some((p) => p.name === name)) return undefined;
      return this.make(op, `unknown query parameter ${name}`, true, { query: [[name, '1']] });
    });
    if (!open) {
      perTarget.push(() => {
        const credential = this.rng.pick([
          { name: 'none', token: null },
          { name: 'wrong', token: 'fpk_this-is-not-a-key-of-anybody-0123456789' },
          { name: 'wrong', token: '\u00ff\u00fe' },
          { name: 'another organization’s agent', token: this.o.other.agentSecret },
        ]);
        if (callers.has('agent') && credential.token === this.o.other.agentSecret) return undefined;
        return this.make(op, 'a credential it does not accept', true, { credential });
      });
      if (callers.has('admin') && !callers.has('viewer')) {
        perTarget.push(() =>
          this.make(op, 'viewer key', true, { credential: { name: 'viewer', token: this.o.own.viewerKey } }),
        );
      }
    }
    if (op.body) {
      const base = this.baseBody(op);
      perTarget.push(() => {
        const text = this.rng.pick(MALFORMED_JSON);
        return this.make(op, `malformed JSON ${describeValue(text)}`, true, { body: text });
      });
      perTarget.push(() => {
        const text = this.rng.pick(NOT_AN_OBJECT);
        return this.make(op, `body ${text}`, true, { body: text });
      });
      perTarget.push(() => {
        const key = this.rng.pick(['zz_unknown', 'id', 'organization_id', 'created_at', '__proto__', 'a\ud800']);
        const props = this.branches(op.body)[0]?.properties ?? {};
        if (key in props) return undefined;
        return this.make(op, `unknown body field ${describeValue(key)}`, true, {
          body: toJson({ ...base, [key]: 1 }),
        });
      });
      perTarget.push(() => {
        const d = this.rng.pick([65, 5000, 100_000]);
        return this.make(op, `body nested ${d} deep`, true, { body: toJson(deep(d, this.rng.pick(['[', '{']))) });
      });
      for (const required of this.branches(op.body)[0]?.required ?? []) {
        perTarget.push(() =>
          this.make(op, `body without ${required}`, true, {
            body: toJson(this.withField(base, [required], undefined, op.body)),
          }),
        );
      }
      for (const field of this.fields(op.body)) {
        perTarget.push(() => this.fieldRefused(op, base, field.path, field.schema));
        for (const v of this.outOfBounds(field.schema)) {
          perTarget.push(() =>
            this.make(op, `body ${field.path.join('.')} past a bound ${describeValue(v)}`, true, {
              body: toJson(this.withField(base, field.path, v, op.body)),
            }),
          );
        }
      }
    } else if (op.method !== 'get') {
      perTarget.push(() => {
        const text = this.rng.pick(['{"a":1}', '[]', '{', 'null', '"x"']);
        return this.make(op, `a body ${text} where none is taken`, true, { body: text });
      });
    }
    for (const make of perTarget) {
      const c = make() ?? make();
      if (c) cases.push(c);
    }
    for (let i = 0; i < this.o.extraRefused && perTarget.length > 0; i++) {
      const c = this.rng.pick(perTarget)();
      if (c) cases.push(c);
    }
    return cases;
  }

  private queryRefused(p: Parameter): string[] {
    const values: string[] = [];
    for (const s of this.branches(p.schema)) {
      if (s.type === 'integer' || s.type === 'number') {
        values.push('abc', '1e308', '9223372036854775808', 'NaN', '1.5', '%ED%A0%80', '0x10', 'Infinity');
        if (s.minimum !== undefined) values.push(String(s.minimum - 1), s.minimum > 0 ? '-0' : '-1e308');
        if (s.maximum !== undefined) values.push(String(s.maximum + 1));
      } else if (s.format === 'uuid') {
        values.push('abc', '0', 'NaN', '%ED%A0%80', 'x'.repeat(300), '00000000-0000-0000-0000-00000000000g');
      } else if (s.enum) {
        values.push(`${String(s.enum[0])}x`, '%ED%A0%80', '1');
      } else if (s.type === 'string') {
        if (s.maxLength !== undefined) values.push('x'.repeat(s.maxLength + 1));
        if (s.minLength > 0) values.push('');
      }
    }
    return values;
  }

  private fieldRefused(op: FuzzOperation, base: unknown, path: FieldPath, schema: Schema): Case | undefined {
    const where = path.join('.');
    const name = this.fieldName(path);
    const types = this.typesOf(schema);
    const kinds: Array<() => [string, unknown] | undefined> = [
      () => {
        const v = this.wrongType(schema);
        return v === undefined ? undefined : ['wrong type', v];
      },
      () => {
        const bounded = this.branches(schema).some((s) => s.maximum !== undefined && s.minimum !== undefined);
        const values = bounded ? HUGE : [];
        return values.length ? ['huge', new Raw(this.rng.pick(values))] : undefined;
      },
      () =>
        types.has('string') ? ['lone surrogate', this.rng.pick(['\ud800', 'a\udfffb', '\udc00\ud800'])] : undefined,
      () => ['nested too deep', deep(this.rng.pick([65, 3000]), this.rng.pick(['[', '{']))],
      () => {
        if (!this.isIdField(schema)) return undefined;
        const foreign = this.idFor(name, this.o.other);
        // Templates are everybody's: another organization has none of its own.
        if (name === 'template_id' || this.rng.int(2) === 0 || foreign === undefined) {
          return ['random id', this.rng.uuid()];
        }
        return ['id of another organization', foreign];
      },
    ];
    for (let attempt = 0; attempt < 6; attempt++) {
      const got = this.rng.pick(kinds)();
      if (!got) continue;
      const [kind, value] = got;
      return this.make(op, `body ${where} ${kind} ${describeValue(value)}`, true, {
        body: toJson(this.withField(base, path, value, op.body)),
      });
    }
    return undefined;
  }

  /** Inputs the schema may accept: every bound itself and odd but valid values. */
  free(op: FuzzOperation): Case[] {
    const perTarget: Array<() => Case | undefined> = [];
    perTarget.push(() => this.make(op, 'as documented', false));
    for (const p of op.parameters.filter((q) => q.in === 'query')) {
      perTarget.push(() => {
        const values = [
          ...this.inBoundsOdd(p.schema, p.name).filter((v): v is string => typeof v === 'string'),
          '%ED%A0%80',
          '%00',
          '',
          'x'.repeat(2000),
        ];
        const v = this.rng.pick(values);
        const query: Array<[string, string]> = [[p.name, encodeIfSafe(v)]];
        if (this.rng.int(4) === 0) query.push([p.name, encodeIfSafe(v)]);
        return this.make(op, `query ${p.name}=${describeValue(v)}${query.length > 1 ? ' twice' : ''}`, false, {
          query,
        });
      });
    }
    for (const p of op.parameters.filter((q) => q.in === 'header')) {
      perTarget.push(() => {
        const v = this.rng.pick([
          'bytes=0-0',
          'bytes=-0',
          'bytes=1-0',
          'bytes=99999999999999999999-',
          'bytes=0-1,2-3',
          '"x"',
          'W/"x"',
          '*',
          'x'.repeat(8000),
          '\u00ff',
        ]);
        return this.make(op, `header ${p.name}=${describeValue(v)}`, false, { headers: { [p.name]: v } });
      });
    }
    if (op.body) {
      const base = this.baseBody(op);
      perTarget.push(() => {
        const type = this.rng.pick([
          'text/plain',
          'application/json; charset=utf-16',
          'application/x-www-form-urlencoded',
          '',
        ]);
        const bom = this.rng.int(2) === 0 ? '\ufeff' : '';
        return this.make(op, `body as ${JSON.stringify(type)}${bom ? ' with a BOM' : ''}`, false, {
          body: bom + toJson(base),
          headers: { 'content-type': type },
        });
      });
      for (const field of this.fields(op.body)) {
        for (const v of this.atBounds(field.schema)) {
          perTarget.push(() =>
            this.make(op, `body ${field.path.join('.')} at a bound ${describeValue(v)}`, false, {
              body: toJson(this.withField(base, field.path, v, op.body)),
            }),
          );
        }
        perTarget.push(() => {
          const values = this.inBoundsOdd(field.schema, this.fieldName(field.path));
          if (values.length === 0) return undefined;
          const v = this.rng.pick(values);
          return this.make(op, `body ${field.path.join('.')}=${describeValue(v)}`, false, {
            body: toJson(this.withField(base, field.path, v, op.body)),
          });
        });
      }
    }
    const cases: Case[] = [];
    for (const make of perTarget) {
      const c = make() ?? make();
      if (c) cases.push(c);
    }
    for (let i = 0; i < this.o.extraFree; i++) {
      const c = this.rng.pick(perTarget)();
      if (c) cases.push(c);
    }
    return cases;
  }
}

/** A value for a query string: percent escapes as written, everything else encoded. */
function encodeIfSafe(v: string): string {
  if (/%[0-9A-Fa-f]{2}/.test(v)) return v;
  return (v as string & { isWellFormed(): boolean }).isWellFormed() ? encodeURIComponent(v) : v;
}
