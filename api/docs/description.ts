/**
 * The OpenAPI document's description: what a client of the API needs beyond the operations.
 * Only its first lines show at once; the reference sections sit in a collapsed block, so
 * "Authorize" stays on the docs' first screen.
 */
export const apiDescription = `Device provisioning and fleet management for Linux desktop fleets:
organizations, activation, provisioning templates (Bereitstellungsvorlagen), the agent protocol, the order
catalog (Auftragskatalog), org units (OE), groups, staged rollouts and ISO builds.

Press **Authorize** and paste the operator token or your organization API key (\`fpk_…\`): this page keeps it in
memory only, so a reload or a closed tab forgets it. Each operation names who may call it (\`x-callers\`) and
the errors it can answer, with an example of each.

<details>
<summary>Conventions, authentication, errors, rollouts, ISO builds and webhooks</summary>

## Conventions

- Bodies are JSON. Unknown body fields are rejected (400); bodies over 1 MiB get 413.
- Ids are UUIDs; a path id that is not a UUID gets 404. Merkmale, backends and workspaces are named by their \`key\`.
- Timestamps are ISO 8601 in UTC, or \`null\`.
- Collections are \`{ "items": [...], "next_cursor": string | null }\`; \`?limit=\` (1–500, default 100) and
  \`?cursor=\` page through them.

## Authentication

| caller | how |
|---|---|
| operator | \`Authorization: Bearer <ADMIN_TOKEN>\`: every organization; alone may create organizations |
| organization API key, role \`admin\` | \`Authorization: Bearer fpk_...\`: everything the operator can, for its own organization |
| organization API key, role \`viewer\` | \`Authorization: Bearer fpk_...\`: every read of its organization except the activation code, the ISO download, the API keys and the audit log |
| installer | the activation code or enrollment session id in the body of \`activate\` and \`resolve\` |
| agent bootstrap | \`device_id\` and the one-time \`bootstrap_token\` from the Runtime Blueprint, in the body |
| agent check-in and report | \`Authorization: Bearer <agent_secret>\` |
| anyone | \`GET /api/v1/health\`, \`GET /api/v1/health/live\`, \`GET /api/v1/openapi.json\`, \`GET /api/v1/docs\` |

Each operation lists its callers in \`x-callers\`. With an organization key, an id of another organization is 404,
exactly like an id that does not exist. Every successful write by the operator or a key is recorded in the
organization's audit log. Agent secrets, bootstrap tokens and organization keys are separate credentials, carry at
least 128 random bits, are returned exactly once and are stored only as SHA-256 hashes. \`GET /metrics\` (Prometheus text, outside \`/api/v1\`) takes the operator token or \`METRICS_TOKEN\`.

## Errors

Every error is \`{ "error": "<code>", "message": "<human readable>" }\`, with \`details\` (the offending fields) for
validation errors. Each response below lists the codes it can carry, with an example of each.

| status | error | when |
|---|---|---|
| 400 | \`invalid_request\` | body or query fails validation (unknown body fields, a lone UTF-16 surrogate in any string, a \`limit\` that is not decimal digits included); a malformed path id is 404 |
| 401 | \`unauthorized\` | operator token or organization key missing, wrong, revoked or expired |
| 401 | \`invalid_agent_secret\` | agent bearer secret missing, malformed or unknown |
| 401 | \`invalid_bootstrap_token\` | bootstrap token wrong, used or expired |
| 403 | \`invalid_activation_code\` | activate or resolve: activation code unknown; enrollment session revoked, expired or out of quota (also an ISO build bound to such a session) |
| 403 | \`template_not_allowed\` | resolve (or an ISO build) of a template that the credential or session does not offer |
| 403 | \`device_deprovisioned\` / \`device_archived\` | agent call of such a device |
| 409 | \`device_deprovisioned\` | an action asked of a deprovisioned device |
| 403 | \`forbidden\` | an organization API key whose role does not allow the call |
| 404 | \`not_found\` | unknown id (or not a UUID), an id of another organization, or an unknown path |
| 404 | \`no_inventory\` | a device's inventory or packages before its agent sent its first inventory |
| 405 | \`method_not_allowed\` | a known path with a method it does not serve; \`Allow\` lists the methods |
| 409 | \`agent_already_bootstrapped\` | second bootstrap of a device |
| 409 | \`device_already_enrolled\` | activate or resolve for a device that holds an agent secret |
| 409 | \`rollout_in_progress\` | a second rollout, or a direct select, deselect or unset, for a scope and Merkmal a running or paused rollout holds |
| 409 | \`rollout_not_active\` | pause, resume or abort of a rollout that is completed or aborted |
| 409 | \`protected_org_unit\` | delete, rename or move of the default org unit "Neue Geräte" |
| 409 | \`org_unit_not_empty\` | delete of an org unit that still has devices or children |
| 409 | \`org_unit_cycle\` | a move that would make an org unit its own ancestor |
| 409 | \`name_taken\` | a group name already used in the organization, or an org unit name already used among the unit's siblings (case-insensitive) |
| 409 | \`iso_not_ready\` | download of a build that is not \`completed\` |
| 409 | \`device_archived\` | every admin write to an archived device: deprovision, reprovision, move, group membership, its own catalog selections, an action |
| 409 | \`action_not_cancelable\` | cancel of an action that is not \`pending\` or \`delivered\` |
| 409 | \`action_not_pending\` | the agent's start of an action that was canceled or expired |
| 409 | \`action_not_running\` | the agent's result for an action that is not \`running\` |
| 409 | \`action_finished\` | the agent's start or result of an action that already has its result |
| 409 | \`device_count_changed\` | a script rollout whose \`expected_devices\` is not the scope's count of devices now |
| 413 | \`payload_too_large\` | body over 1 MiB; an agent's inventory over 16 MiB uncompressed or 20,000 packages |
| 416 | \`range_not_satisfiable\` | ISO download with a \`Range\` past the end of the file |
| 431 | \`headers_too_large\` | request line or headers over 16 KiB (answered before any route) |
| 422 | \`unknown_merkmal\` | a Merkmal key that does not exist |
| 422 | \`not_in_catalog\` | selection of a Merkmal that is not in the order catalog for the device's backend |
| 422 | \`inventory_hash_mismatch\` | an agent's inventory whose \`hash\` is not its canonical form's |
| 422 | \`invalid_event_type\` | agent report with a non-agent event type |
| 422 | \`organization_mismatch\` | device, org unit or group of different organizations combined |
| 422 | \`disk_encryption_unavailable\` | resolve of an encrypted template, a disk key's escrow or reveal while the service has no \`DISK_KEY_ENCRYPTION_KEY\` |
| 429 | \`too_many_requests\` | too many failed activations from one address; \`Retry-After\` says when to retry |
| 500 | \`internal_error\` | anything unexpected; the message carries a request id, never internals |
| 503 | \`service_unavailable\` | the database cannot answer in time, or the server sheds load; see \`Retry-After\` |

## Device actions

An admin asks a device to do something now (\`POST /devices/{id}/actions\`): \`reboot\`, \`apply_now\`,
\`apply_updates\` or a \`script\`. The service holds the request until the device calls in, delivers it once and
records what happened, so an offline laptop gets it when it is back.

- **States.** \`pending\` → \`delivered\` (a check-in answer carried it) → \`running\` (the agent started it) →
  \`succeeded\` (exit code 0) or \`failed\`; \`expired\` when not started by \`expires_at\` (default 7 days, 60 s to
  30 days ahead; judged at delivery and at the start, and by a sweep every minute: it never runs); \`canceled\` by
  an admin (only \`pending\` or \`delivered\`), or when its device is deprovisioned or archived.
- **Delivery.** The check-in answer carries \`actions\`: the pending and delivered ones, oldest first, at most 10,
  their parameters with every default filled in. They are part of the \`ETag\`: a device without actions keeps its
  304; a queued action makes its next check-in a 200. The agent starts each (\`POST /agent/actions/{id}/start\`)
  before it runs it, never runs an id twice, and reports one result (\`POST /agent/actions/{id}/result\`).
- **In rings.** A rollout may carry \`device_action\` instead of a Merkmal's change: each ring's devices get the
  action when the ring opens, and the judge counts \`succeeded\` as converged, \`failed\` and \`expired\` as failed.
  A script's rollout needs \`expected_devices\` (409 \`device_count_changed\` when the scope's count moved).
- **Scripts and outputs** are an admin's: a viewer reads \`parameters.script\` and \`result.output\` as null. The
  audit log keeps a script's SHA-256 and size (\`action.create\`), never its text; no webhook, event or log line
  holds a script or an output. \`output\` keeps the last 64 KiB.

## Rollouts

A rollout makes one select, deselect or unset of a catalog Merkmal at an org unit or a group in rings, watches
what the agents report, and stops by itself when too many fail (\`POST /organizations/{id}/rollouts\`).

- **Rings.** At creation it takes the devices of the scope whose effective state (or \`optionen\`) the change
  alters, not archived or deprovisioned, and puts each in a ring by a stable hash of rollout and device id:
  \`rings\` are cumulative percentages (default \`[10, 50, 100]\`), so ring k holds about
  \`rings[k] − rings[k−1]\` percent of them. Ring 0 opens at once. A device in an open ring gets the new state at
  its next check-in (its ETag changes) with a \`selected\` / \`deselected\` event, \`payload.cause: "rollout"\`;
  the others keep theirs. Devices that enter the scope later get the change when the rollout completes.
- **Judging.** At least every 30 s while it runs, and soon after reports from the open ring, over the ring's
  devices that are not stale (reported = converged + failed): it pauses at once with
  \`paused_reason: "failure_ratio"\` when failed > 0 and failed / reported > \`max_failure_ratio\` (default 0.1)
  with reported ≥ min(5, ring size); the next ring opens when \`soak_seconds\` (default 3600) have passed since
  this one opened, reported / devices ≥ \`min_reported_ratio\` (default 0.9) and the failure ratio is within the
  limit. After the last ring the change is written at the scope as a selection would write it, and the rollout is
  \`completed\`.
- **Pause, resume, abort.** \`pause\` (reason \`manual\`) stops further rings; \`resume\` goes on judging (after an
  automatic pause, the failures so far are accepted); \`abort\` gives every device of an opened ring its previous
  state back at its next check-in and writes nothing at the scope. A completed or aborted rollout answers 409
  \`rollout_not_active\`.
- While a rollout of a scope and Merkmal is \`running\` or \`paused\`, a second one, or a direct select, deselect
  or unset of that Merkmal at that scope, is 409 \`rollout_in_progress\`.
- \`GET /devices/{id}/catalog/{merkmal}/explain\` shows a step \`rollout\` (\`rollout_id, ring, ring_open, state\`)
  for a device that a running or paused rollout holds back or has moved. Transitions are audited
  (\`rollout.create\`, \`rollout.pause\`, \`rollout.resume\`, \`rollout.abort\`; what the service does by itself with
  actor \`{ "type": "system" }\`) and sent as webhooks (below).

## ISO builds

A build runs \`pending\` → \`running\` (\`progress\` 0–100) → \`completed\`, or \`failed\` with an
\`error\`. When a build completes, the organization's older completed builds are deleted, file and row. Builds
are deleted 7 days after they finished; WLAN credentials given at trigger time live only encrypted in the queued
job and are gone when it ends.

## Webhooks

An organization's admins subscribe a URL to events (\`POST /organizations/{id}/webhooks\`). Each event is
\`POST\`ed as \`{ "id", "type", "organization_id", "created_at", "data" }\` with \`Content-Type: application/json\`
and \`Fleet-Signature: t=<unix seconds>,v1=<hex>\`, where \`v1\` is the HMAC-SHA256 of \`<t>.<raw body>\` keyed with
the UTF-8 bytes of the secret returned once at creation. A receiver recomputes it over the raw bytes it got,
compares in constant time, and refuses a \`t\` more than a few minutes old. \`id\` is the same on every retry: use
it to ignore a repeat.

| type | when | \`data\` |
|---|---|---|
| \`device.activated\` | an installer activated a device | \`device_id, serial, hostname, oe_id, enrollment_session_id\` |
| \`device.bootstrapped\` | its agent bootstrapped | \`device_id, serial, hostname, oe_id\` |
| \`device.deprovisioned\`, \`device.reprovisioned\`, \`device.archived\` | the lifecycle changed | the same; \`device.archived\` adds \`reason: "stale"\` when the org unit's \`archive_stale_after_days\` archived it |
| \`device.stale\` | no check-in for three poll intervals since its last check-in or bootstrap (found within five minutes); once per stale period, again after a check-in | \`device_id, serial, hostname, oe_id, agent_last_checkin\` (null before the first) |
| \`order.applied\`, \`order.apply_failed\`, \`order.removed\`, \`order.remove_failed\` | an agent reported it | \`device_id, serial, hostname, merkmal, device_event_id, payload\` |
| \`iso_build.completed\`, \`iso_build.failed\` | a build ended | \`iso_build_id, status, template_id, enrollment_session_id, size_bytes, sha256, expires_at, error\` |
| \`rollout.ring_opened\` | a rollout opened a ring (ring 0 at its creation) | \`rollout_id, scope, scope_id, merkmal, action, status, paused_reason, current_ring, device_action, ring\` (\`device_action\`: \`{ type }\` of a device action's rollout, else null) |
| \`rollout.paused\` | a rollout paused, by an admin or by the failure ratio | the same without \`ring\`; \`paused_reason\` says which |
| \`rollout.completed\` | a rollout's last ring passed and the change was written at the scope | the same |
| \`rollout.aborted\` | an admin aborted a rollout | the same |
| \`vulnerability.detected\` | the first device of the organization became affected by a CVE (matching after a feed change or a new inventory); once per organization and CVE, never for \`unimportant\` ones | \`cve, urgency, devices_affected\` (counted when that match ran) |
| \`action.finished\` | a device action succeeded, failed or expired (not for a cancel) | \`action_id, device_id, type, status, exit_code\` (null when expired); never a script or an output |
| \`disk_key.revealed\` | an admin revealed a device's disk recovery key (it is rotated at the device's next check-in) | \`device_id, key_id, reason\` (never the key) |
| \`webhook.test\` | an admin asked for a test (\`POST /webhooks/{id}/test\`, or the portal's button); sent to that webhook alone, whatever it subscribed to, and not subscribable | \`webhook_id, url\` |

Deliveries are queued in the transaction of the change (a change that is rolled back sends nothing), answered
within 10 s or failed, never redirected, and retried until a 2xx: 9 attempts, after pauses of 30 s, 2 min, 10 min,
30 min, 1 h, 3 h, 6 h and 12 h (each ±20 %). A webhook whose deliveries failed for 3 days is disabled
(\`disabled_at\`, and a \`webhook.disable\` audit event). Each attempt (status, error, duration) is listed under
\`GET /webhooks/{id}/deliveries/{delivery_id}/attempts\`. Every address the URL's host resolves to is checked at
each delivery: private, loopback and link-local addresses are refused unless the operator allows them.
Each webhook's deliveries are sent one at a time, in a queue of their own: a receiver that refuses, hangs or
does not resolve delays only its own deliveries, never another webhook's. A webhook's \`pending_deliveries\` counts
those neither delivered nor given up (its backlog).

</details>
`;
