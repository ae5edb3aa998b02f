/** Every endpoint of org units, groups, the device views and the order catalog is documented with its errors. */
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';

const ctx = useTestApp();

const expected: Array<[string, string, number, string[]]> = [
  [
    'post',
    '/api/v1/organizations/{id}/org-units',
    201,
    ['not_found', 'organization_mismatch', 'invalid_request', 'unauthorized'],
  ],
  ['get', '/api/v1/organizations/{id}/org-units', 200, ['not_found', 'invalid_request', 'unauthorized']],
  ['get', '/api/v1/org-units/{id}', 200, ['not_found', 'unauthorized']],
  [
    'patch',
    '/api/v1/org-units/{id}',
    200,
    ['not_found', 'protected_org_unit', 'org_unit_cycle', 'organization_mismatch', 'invalid_request'],
  ],
  ['delete', '/api/v1/org-units/{id}', 204, ['not_found', 'protected_org_unit', 'org_unit_not_empty']],
  ['post', '/api/v1/organizations/{id}/groups', 201, ['not_found', 'invalid_request']],
  ['get', '/api/v1/organizations/{id}/groups', 200, ['not_found']],
  ['get', '/api/v1/groups/{id}', 200, ['not_found']],
  ['patch', '/api/v1/groups/{id}', 200, ['not_found', 'invalid_request']],
  ['delete', '/api/v1/groups/{id}', 204, ['not_found']],
  ['get', '/api/v1/groups/{id}/devices', 200, ['not_found']],
  ['put', '/api/v1/groups/{id}/devices/{device_id}', 204, ['not_found', 'organization_mismatch', 'device_archived']],
  ['delete', '/api/v1/groups/{id}/devices/{device_id}', 204, ['not_found', 'organization_mismatch']],
  ['get', '/api/v1/organizations/{id}/devices', 200, ['not_found', 'organization_mismatch', 'invalid_request']],
  ['get', '/api/v1/devices/{id}', 200, ['not_found']],
  [
    'put',
    '/api/v1/devices/{id}/org-unit',
    200,
    ['not_found', 'organization_mismatch', 'device_archived', 'invalid_request'],
  ],
  ['get', '/api/v1/devices/{id}/catalog', 200, ['not_found']],
  ['get', '/api/v1/org-units/{id}/catalog', 200, ['not_found']],
  ['get', '/api/v1/groups/{id}/catalog', 200, ['not_found']],
];
for (const scope of ['devices', 'org-units', 'groups']) {
  for (const verb of ['select', 'deselect']) {
    expected.push([
      'post',
      `/api/v1/${scope}/{id}/catalog/{merkmal}/${verb}`,
      200,
      ['not_found', 'unknown_merkmal', 'not_in_catalog', 'invalid_request', 'unauthorized'],
    ]);
  }
  expected.push([
    'delete',
    `/api/v1/${scope}/{id}/catalog/{merkmal}`,
    204,
    ['not_found', 'unknown_merkmal', 'not_in_catalog'],
  ]);
}

describe('OpenAPI document', () => {
  it.each(expected)('documents %s %s with its success and error responses', async (method, path, success, codes) => {
    const res = await ctx.request('GET', '/api/v1/openapi.json', { token: null });
    expect(res.status).toBe(200);
    const op = res.body.paths?.[path]?.[method];
    expect(op, `${method} ${path}`).toBeDefined();
    expect(op.operationId).toBeTruthy();
    expect(op.security).toEqual([{ AdminToken: [] }]);
    expect(Object.keys(op.responses)).toContain(String(success));
    const descriptions = Object.entries(op.responses as Record<string, { description: string }>)
      .filter(([status]) => Number(status) >= 400)
      .map(([, r]) => r.description)
      .join(' ');
    for (const code of codes) expect(descriptions, `${method} ${path}`).toContain('`' + code + '`');
  });

  it('documents status 409 for device_archived and 422 for organization_mismatch on the move', async () => {
    const res = await ctx.request('GET', '/api/v1/openapi.json', { token: null });
    const op = res.body.paths['/api/v1/devices/{id}/org-unit'].put;
    expect(op.responses['409'].description).toContain('device_archived');
    expect(op.responses['422'].description).toContain('organization_mismatch');
    expect(op.responses['404'].description).toContain('not_found');
  });
});
