/**
 * Who may call what, written by hand from CONTRACT §2, §12, §16 and §17, not read from the
 * routes' declarations: the auth matrix holds the code to this table, so a declaration
 * that drifts from the contract (a viewer reading enrollment sessions) fails a test.
 * Every operation of the OpenAPI document must be listed here, and nothing else.
 *
 * - `anyone`: no credential (§2).
 * - `installer`: the credential travels in the body (activate, resolve, agent bootstrap; §2).
 * - `agent`: `Authorization: Bearer <agent_secret>` (§2, §7).
 * - `operator`: the operator token only (§12: creating organizations).
 * - `admin`: the operator or an organization key with role `admin` (§12).
 * - `viewer`: the operator or any organization key: a `GET` of the organization that is
 *   not the activation code, an enrollment session, the ISO download, the API keys, the
 *   audit log (§12, §17) or a webhook (§16: operator and admin only).
 */
export type ExpectedCallers = 'anyone' | 'installer' | 'agent' | 'operator' | 'admin' | 'viewer';

export const EXPECTED_CALLERS: Record<string, ExpectedCallers> = {
  // §2, §15
  'GET /api/v1/health': 'anyone',
  'GET /api/v1/health/live': 'anyone',
  // §3, §12
  'POST /api/v1/organizations': 'operator',
  'GET /api/v1/organizations': 'viewer',
  'GET /api/v1/organizations/{id}': 'viewer',
  'PATCH /api/v1/organizations/{id}': 'admin',
  'GET /api/v1/organizations/{id}/activation-code': 'admin',
  'POST /api/v1/organizations/{id}/activation-code/rotate': 'admin',
  // §4, §12: the catalog data is readable with any key
  'GET /api/v1/backends': 'viewer',
  'GET /api/v1/workspaces': 'viewer',
  'GET /api/v1/merkmale': 'viewer',
  'GET /api/v1/templates': 'viewer',
  'GET /api/v1/templates/{id}': 'viewer',
  // §5
  'POST /api/v1/activate': 'installer',
  'POST /api/v1/templates/{id}/resolve': 'installer',
  // §6, §17: a session id is an installer credential, so no viewer reads one
  'POST /api/v1/organizations/{id}/enrollment-sessions': 'admin',
  'GET /api/v1/organizations/{id}/enrollment-sessions': 'admin',
  'GET /api/v1/enrollment-sessions/{id}': 'admin',
  'POST /api/v1/enrollment-sessions/{id}/revoke': 'admin',
  // §7
  'POST /api/v1/agent/bootstrap': 'installer',
  'POST /api/v1/agent/checkin': 'agent',
  'POST /api/v1/agent/report': 'agent',
  'PUT /api/v1/agent/inventory': 'agent',
  // §8
  'GET /api/v1/organizations/{id}/devices': 'viewer',
  'GET /api/v1/organizations/{id}/fleet-status': 'viewer',
  'GET /api/v1/devices/{id}': 'viewer',
  'PUT /api/v1/devices/{id}/org-unit': 'admin',
  'POST /api/v1/devices/{id}/deprovision': 'admin',
  'POST /api/v1/devices/{id}/reprovision': 'admin',
  'POST /api/v1/devices/{id}/archive': 'admin',
  'GET /api/v1/devices/{id}/hardware': 'viewer',
  // §27: the security data (the feeds are the operator's)
  'GET /api/v1/devices/{id}/vulnerabilities': 'viewer',
  'GET /api/v1/organizations/{id}/vulnerabilities': 'viewer',
  'GET /api/v1/vulnerability-feeds': 'operator',
  'GET /api/v1/devices/{id}/inventory': 'viewer',
  'GET /api/v1/devices/{id}/packages': 'viewer',
  'GET /api/v1/devices/{id}/events': 'viewer',
  // §9
  'POST /api/v1/organizations/{id}/org-units': 'admin',
  'GET /api/v1/organizations/{id}/org-units': 'viewer',
  'GET /api/v1/org-units/{id}': 'viewer',
  'PATCH /api/v1/org-units/{id}': 'admin',
  'DELETE /api/v1/org-units/{id}': 'admin',
  'POST /api/v1/organizations/{id}/groups': 'admin',
  'GET /api/v1/organizations/{id}/groups': 'viewer',
  'GET /api/v1/groups/{id}': 'viewer',
  'PATCH /api/v1/groups/{id}': 'admin',
  'DELETE /api/v1/groups/{id}': 'admin',
  'GET /api/v1/groups/{id}/devices': 'viewer',
  'PUT /api/v1/groups/{id}/devices/{device_id}': 'admin',
  'DELETE /api/v1/groups/{id}/devices/{device_id}': 'admin',
  'GET /api/v1/devices/{id}/catalog': 'viewer',
  'GET /api/v1/org-units/{id}/catalog': 'viewer',
  'GET /api/v1/groups/{id}/catalog': 'viewer',
  'POST /api/v1/devices/{id}/catalog/{merkmal}/select': 'admin',
  'POST /api/v1/devices/{id}/catalog/{merkmal}/deselect': 'admin',
  'DELETE /api/v1/devices/{id}/catalog/{merkmal}': 'admin',
  'POST /api/v1/org-units/{id}/catalog/{merkmal}/select': 'admin',
  'POST /api/v1/org-units/{id}/catalog/{merkmal}/deselect': 'admin',
  'DELETE /api/v1/org-units/{id}/catalog/{merkmal}': 'admin',
  // §20: operator, org admin, org viewer
  'GET /api/v1/devices/{id}/catalog/{merkmal}/explain': 'viewer',
  'POST /api/v1/groups/{id}/catalog/{merkmal}/select': 'admin',
  'POST /api/v1/groups/{id}/catalog/{merkmal}/deselect': 'admin',
  'DELETE /api/v1/groups/{id}/catalog/{merkmal}': 'admin',
  // §10, §12, §17: the image carries the code or a session id
  'POST /api/v1/organizations/{id}/iso-builds': 'admin',
  'GET /api/v1/organizations/{id}/iso-builds': 'viewer',
  'GET /api/v1/iso-builds/{id}': 'viewer',
  'GET /api/v1/iso-builds/{id}/download': 'admin',
  // §12
  'POST /api/v1/organizations/{id}/api-keys': 'admin',
  'GET /api/v1/organizations/{id}/api-keys': 'admin',
  'POST /api/v1/api-keys/{id}/revoke': 'admin',
  // §13
  'GET /api/v1/organizations/{id}/audit-events': 'admin',
  // §16
  'POST /api/v1/organizations/{id}/webhooks': 'admin',
  'GET /api/v1/organizations/{id}/webhooks': 'admin',
  'DELETE /api/v1/webhooks/{id}': 'admin',
  'GET /api/v1/webhooks/{id}/deliveries': 'admin',
  'GET /api/v1/webhooks/{id}/deliveries/{delivery_id}/attempts': 'admin',
  'POST /api/v1/organizations/{id}/rollouts': 'admin',
  'GET /api/v1/organizations/{id}/rollouts': 'viewer',
  'GET /api/v1/rollouts/{id}': 'viewer',
  // §26
  'GET /api/v1/rollouts/{id}/devices': 'viewer',
  'POST /api/v1/rollouts/{id}/pause': 'admin',
  'POST /api/v1/rollouts/{id}/resume': 'admin',
  'POST /api/v1/rollouts/{id}/abort': 'admin',
  'POST /api/v1/webhooks/{id}/test': 'admin',
  // §29: the escrow takes the bootstrap token or the agent secret; keys are never a viewer's
  'POST /api/v1/agent/disk-keys': 'agent',
  'GET /api/v1/devices/{id}/disk-keys': 'admin',
  'POST /api/v1/disk-keys/{id}/reveal': 'admin',
  // §28: viewers read actions (without scripts and outputs); the agent starts and finishes its own
  'POST /api/v1/devices/{id}/actions': 'admin',
  'GET /api/v1/devices/{id}/actions': 'viewer',
  'GET /api/v1/actions/{id}': 'viewer',
  'POST /api/v1/actions/{id}/cancel': 'admin',
  'POST /api/v1/agent/actions/{id}/start': 'agent',
  'POST /api/v1/agent/actions/{id}/result': 'agent',
};

/** The callers `x-callers` names for an entry of the table. */
export function xCallersOf(expected: ExpectedCallers): string[] {
  switch (expected) {
    case 'anyone':
    case 'installer':
    case 'agent':
    case 'operator':
      return [expected];
    case 'admin':
      return ['operator', 'admin'];
    case 'viewer':
      return ['operator', 'admin', 'viewer'];
  }
}
