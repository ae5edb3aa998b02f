/**
 * The error examples of the OpenAPI document, checked over every operation: each speaks
 * of that operation only (its callers, its own parameters and body, its own resources),
 * each error code has one status across the document, and the examples are what the
 * server answers: the 401, 403, 404 and 400 of every operator and organization route are
 * replayed against it and must come back word for word.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_IDS } from '../../api/access/error_examples.ts';
import { errorCodes } from '../../api/http/errors.ts';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp();

interface Example {
  summary: string;
  description?: string;
  value: { error: string; message: string; details?: Array<{ path: string[]; message: string }> };
}

interface Operation {
  key: string;
  method: string;
  path: string;
  callers: string[];
  parameters: Array<{ name: string; in: string }>;
  bodyFields: string[] | null;
  examples: Map<number, Array<[string, Example]>>;
}

let doc: any;
let operations: Operation[];
let keys: { admin: string; viewer: string };

beforeAll(async () => {
  const res = await ctx.request('GET', '/api/v1/openapi.json', { token: null });
  expect(res.status).toBe(200);
  doc = res.body;
  operations = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const examples = new Map<number, Array<[string, Example]>>();
      for (const [status, response] of Object.entries<any>(op.responses)) {
        const found = response.content?.['application/json']?.examples;
        if (Number(status) >= 400 && found) examples.set(Number(status), Object.entries<Example>(found));
      }
      const body = op.requestBody?.content?.['application/json']?.schema;
      operations.push({
        key: `${method.toUpperCase()} ${path}`,
        method,
        path,
        callers: op['x-callers'] ?? [],
        parameters: op.parameters ?? [],
        bodyFields: body ? Object.keys(resolve(body).properties ?? {}) : null,
        examples,
      });
    }
  }
  expect(operations.length).toBeGreaterThan(60);
  const org = await createOrganization(ctx);
  keys = {
    admin: (await createApiKey(ctx, org.id, 'admin')).key,
    viewer: (await createApiKey(ctx, org.id, 'viewer')).key,
  };
});

function resolve(schema: any): any {
  return schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema;
}

function examples(op: Operation, code: string): Example[] {
  return [...op.examples.values()].flat().flatMap(([, e]) => (e.value.error === code ? [e] : []));
}

/** `org-units` → `org unit`, `deliveries` → `delivery`: how the path names its resources. */
function singular(segment: string): string {
  return segment.replace(/ies$/, 'y').replace(/s$/, '').replaceAll('-', ' ');
}

/** The resource of each path parameter, by the segment before it: the path's own comes first. */
function pathResources(path: string): Array<{ param: string; resource: string }> {
  const segments = path.split('/');
  return segments.flatMap((s, i) => {
    const param = /^\{(.+)\}$/.exec(s)?.[1];
    return param ? [{ param, resource: singular(segments[i - 1]!) }] : [];
  });
}

const orgRoute = (op: Operation) => op.callers.includes('operator');

describe('the error examples of every operation', () => {
  it('401: the credentials its callers use', () => {
    let checked = 0;
    for (const op of operations) {
      const [unauthorized] = examples(op, 'unauthorized');
      const [agent] = examples(op, 'invalid_agent_secret');
      if (orgRoute(op)) {
        expect(unauthorized?.value.message, op.key).toContain('<ADMIN_TOKEN>');
        const keyWelcome = op.callers.includes('admin') || op.callers.includes('viewer');
        if (keyWelcome) expect(unauthorized!.value.message, op.key).toMatch(/organization API key.*fpk_/);
        else expect(unauthorized!.value.message, op.key).not.toMatch(/fpk_|API key/);
        expect(agent, op.key).toBeUndefined();
        checked++;
      } else if (op.callers.includes('agent')) {
        expect(agent?.value.message, op.key).toContain('<agent_secret>');
        expect(unauthorized, op.key).toBeUndefined();
        checked++;
      } else {
        // Installers and anyone carry no bearer credential at all.
        expect(unauthorized ?? agent, op.key).toBeUndefined();
      }
    }
    expect(checked).toBeGreaterThan(55);
  });

  it('403 forbidden: the caller it turns away', () => {
    for (const op of operations) {
      const [forbidden] = examples(op, 'forbidden');
      if (!orgRoute(op) || op.callers.includes('viewer')) {
        expect(forbidden, op.key).toBeUndefined();
      } else if (op.callers.includes('admin')) {
        expect(forbidden?.value.message, op.key).toBe('an API key with role viewer may not make this call');
      } else {
        expect(forbidden?.value.message, op.key).toMatch(/^only the operator/);
      }
    }
  });

  it('400 on every operation: what its own input answers, else an unknown query parameter', () => {
    let checked = 0;
    for (const op of operations) {
      const found = examples(op, 'invalid_request');
      // Every route refuses a query parameter it does not name, so every one documents a 400.
      expect(found.length, `${op.key} documents 400`).toBe(1);
      for (const example of found) {
        const { message, details } = example.value;
        if (op.bodyFields === null) expect(message, op.key).not.toMatch(/body/);
        expect(details?.length, op.key).toBeGreaterThan(0);
        const own = new Set([
          ...(op.bodyFields ?? []),
          ...op.parameters.filter((p) => p.in !== 'path').map((p) => p.name),
        ]);
        const unknownParameter = details!.every((d) => d.message === 'not a parameter of this call');
        for (const detail of details!) {
          if (unknownParameter) expect(own, `${op.key}: ${detail.path[0]}`).not.toContain(detail.path[0]);
          else if (detail.path.length > 0) expect(own, `${op.key}: ${detail.path[0]}`).toContain(detail.path[0]);
        }
        expect(example.description, op.key).toMatch(/^The answer to the (body|query|header) `.+`\.$/);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
  });

  it('404: the resource of its own path first, then only resources it names', () => {
    let checked = 0;
    for (const op of operations) {
      const found = op.examples.get(404) ?? [];
      const resources = pathResources(op.path);
      if (resources.length === 0 && found.length === 0) continue;
      expect(found.length, `${op.key} documents 404`).toBeGreaterThan(0);
      const [first, ...others] = found;
      expect(first![0]).toBe('not_found');
      const own = resources[0]!.resource;
      expect(first![1].value.message.toLowerCase(), op.key).toMatch(
        new RegExp(`^(\\w+ )?${own} [0-9a-f-]{36} not found$`),
      );
      for (const [key, example] of others) {
        // The one 404 that is not an unknown id: a device known, without an inventory yet.
        if (example.value.error === 'no_inventory') {
          expect(example.value.message, op.key).toMatch(/^device [0-9a-f-]{36} has sent no inventory yet/);
          continue;
        }
        const m = /^(.+) [0-9a-f-]{36}( \((\w+)\))? not found$/.exec(example.value.message);
        expect(m, `${op.key} ${key}`).not.toBeNull();
        const [, label, , field] = m!;
        if (field) {
          const takes = [...(op.bodyFields ?? []), ...op.parameters.map((p) => p.name)];
          expect(takes, `${op.key}: ${field}`).toContain(field);
        } else {
          expect(
            resources.some((r) => label!.toLowerCase().endsWith(r.resource)),
            `${op.key}: ${example.value.message}`,
          ).toBe(true);
        }
      }
      checked++;
    }
    expect(checked).toBeGreaterThan(50);
  });

  it("gives each error code one status across the document, as the description's error table does", () => {
    const statuses = new Map<string, Set<number>>();
    for (const op of operations) {
      for (const [status, list] of op.examples) {
        for (const [, example] of list)
          statuses.set(example.value.error, (statuses.get(example.value.error) ?? new Set()).add(status));
      }
    }
    const table = new Map<string, Set<number>>();
    for (const row of (doc.info.description as string).matchAll(/^\| (\d{3}) \| (.+?) \|/gm)) {
      for (const code of row[2]!.matchAll(/`(\w+)`/g))
        table.set(code[1]!, (table.get(code[1]!) ?? new Set()).add(Number(row[1])));
    }
    for (const [code, found] of statuses) {
      expect(errorCodes, code).toContain(code);
      // The contract gives device_archived and device_deprovisioned two statuses: the agent's 403
      // and the admins' 409.
      expect([...found].sort(), code).toEqual(
        code === 'device_archived' || code === 'device_deprovisioned' ? [403, 409] : [[...found][0]],
      );
      expect([...(table.get(code) ?? [])].sort(), `${code} in the description's table`).toEqual([...found].sort());
    }
    expect(statuses.get('invalid_activation_code')).toEqual(new Set([403]));
    expect(statuses.get('template_not_allowed')).toEqual(new Set([403]));
  });
});

describe('the error examples are what the server answers', () => {
  /** The path with the examples' ids: the path's own resource first, any other the second. */
  function url(op: Operation, query = ''): string {
    let n = 0;
    return op.path.replaceAll(/\{[^}]+\}/g, () => EXAMPLE_IDS[n++ === 0 ? 0 : 1]) + query;
  }

  async function expectAnswer(op: Operation, example: Example, token: string | null, status: number, init = {}) {
    const res = await ctx.request(op.method.toUpperCase(), url(op), { token, ...init });
    expect({ status: res.status, body: res.body }, op.key).toEqual({ status, body: example.value });
  }

  it('401 without a credential', async () => {
    let replayed = 0;
    for (const op of operations) {
      const [example] = [...examples(op, 'unauthorized'), ...examples(op, 'invalid_agent_secret')];
      if (!example) continue;
      await expectAnswer(op, example, null, 401);
      replayed++;
    }
    expect(replayed).toBeGreaterThan(55);
  });

  it('403 forbidden with the caller it turns away', async () => {
    for (const op of operations) {
      const [example] = examples(op, 'forbidden');
      if (example) await expectAnswer(op, example, op.callers.includes('admin') ? keys.viewer : keys.admin, 403);
    }
  });

  it("404 with an organization key, for an id that is not the key's", async () => {
    let replayed = 0;
    for (const op of operations) {
      const first = op.examples.get(404)?.[0];
      if (!first || !orgRoute(op) || op.callers.length === 1) continue;
      await expectAnswer(op, first[1], keys.admin, 404);
      replayed++;
    }
    expect(replayed).toBeGreaterThan(50);
  });

  it("400 with the operator token, for the example's own input", async () => {
    let replayed = 0;
    for (const op of operations) {
      const [example] = examples(op, 'invalid_request');
      if (!example || !orgRoute(op)) continue;
      const [, target, input] = /^The answer to the (\w+) `(.+)`\.$/.exec(example.description!)!;
      const res = await ctx.request(
        op.method.toUpperCase(),
        target === 'query' ? url(op, `?${input}`) : url(op),
        target === 'body' ? { rawBody: input, headers: { 'content-type': 'application/json' } } : {},
      );
      expect({ status: res.status, body: res.body }, op.key).toEqual({ status: 400, body: example.value });
      replayed++;
    }
    expect(replayed).toBeGreaterThan(25);
  });
});
