/**
 * Deno smoke test (CI): serves the same app with Deno (`deno task api`) against a real,
 * migrated PostgreSQL and checks health plus an organization created and read back, the
 * agent's path with its batched heartbeat, the metrics, and the process's edges as Node
 * has them: a PORT in use (one line, exit 1), the drain of SHUTDOWN_DRAIN_SECONDS with
 * `connection: close` on what is answered during it, and the heartbeats written on stop.
 * Run with `npx tsx test/deno/smoke.ts`. Uses DATABASE_URL when set, else an embedded one.
 */
import { Buffer } from 'node:buffer';
import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate } from '../../api/db/migrate.ts';
import { randomToken } from '../../api/http/crypto.ts';
import { createLogger } from '../../api/log.ts';
import postgres from 'postgres';
import { freePort, startEmbeddedPostgres, type RunningPostgres } from '../../api/runtime/embedded_postgres.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const log = createLogger('warn');

let checks = 0;

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(`deno smoke: ${what}`);
  console.log(`ok - ${what}`);
  checks++;
}

async function waitForHealth(base: string, deadline: number): Promise<Response> {
  for (;;) {
    try {
      return await fetch(`${base}/api/v1/health`);
    } catch {
      if (Date.now() > deadline) throw new Error('deno smoke: the Deno server did not start in time');
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/**
 * A POST whose body is sent in two parts, on a raw connection: in flight from the first
 * part until `finish()` sends the rest; resolves with the response's head.
 */
function postInTwoParts(port: number, path: string, headers: Record<string, string>, body: string) {
  const socket = connect({ host: '127.0.0.1', port });
  let received = '';
  const answered = new Promise<string>((resolve) => {
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n\r\n')) resolve(received.slice(0, received.indexOf('\r\n\r\n')));
    });
    socket.on('error', () => resolve(received));
    socket.on('close', () => resolve(received));
  });
  const payload = Buffer.from(body, 'utf8');
  let head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${payload.length}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  socket.write(Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), payload.subarray(0, 5)]));
  return {
    finish: () => {
      socket.write(payload.subarray(5));
      return answered;
    },
    close: () => socket.destroy(),
  };
}

let embedded: RunningPostgres | null = null;
const stateDir = await mkdtemp(join(tmpdir(), 'fleet-deno-smoke-'));
await chmod(stateDir, 0o711);
let databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  embedded = await startEmbeddedPostgres({ stateDir, database: 'fleet', log, ephemeral: true });
  databaseUrl = embedded.url;
}
await migrate(databaseUrl, log);
const adminToken = randomToken();
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const deno = spawn(join(root, 'node_modules', '.bin', 'deno'), ['task', 'api'], {
  cwd: root,
  env: {
    ...process.env,
    DATABASE_URL: databaseUrl,
    ADMIN_TOKEN: adminToken,
    ISO_ENCRYPTION_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
    PORT: String(port),
    DATA_DIR: stateDir,
    LOG_LEVEL: 'info',
    SHUTDOWN_DRAIN_SECONDS: '2',
    // One check-in in flight at a time: a held one makes the next one refused (below).
    CHECKIN_MAX_IN_FLIGHT: '1',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let output = '';
deno.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
const db = postgres(databaseUrl, { max: 1, onnotice: () => {} });
const lastCheckin = async (id: string): Promise<number | null> => {
  const [row] = await db<
    Array<{ t: Date | null }>
  >`select (select at from device_heartbeats where device_id = ${id}) as t`;
  return row?.t?.getTime() ?? null;
};
try {
  const health = await waitForHealth(base, Date.now() + 60_000);
  check(health.status === 200, 'GET /api/v1/health answers 200 under Deno');
  const body = (await health.json()) as { status: string; database: string };
  check(body.status === 'ok' && body.database === 'ok', 'health says {"status":"ok","database":"ok"}');

  const headers = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };
  const created = await fetch(`${base}/api/v1/organizations`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'Deno GmbH', kontakt_email: 'it@deno.example' }),
  });
  check(created.status === 201, 'POST /api/v1/organizations answers 201 under Deno');
  const org = (await created.json()) as { id: string; name: string; kontakt_email: string };
  const read = await fetch(`${base}/api/v1/organizations/${org.id}`, { headers });
  check(read.status === 200, 'GET /api/v1/organizations/{id} answers 200 under Deno');
  check(JSON.stringify(await read.json()) === JSON.stringify(org), 'the organization reads back unchanged');
  const denied = await fetch(`${base}/api/v1/organizations`);
  check(denied.status === 401, 'a request without the admin token gets 401');
  const doc = await fetch(`${base}/api/v1/openapi.json`);
  check(
    doc.status === 200 && ((await doc.json()) as { openapi: string }).openapi === '3.1.0',
    'the OpenAPI document is served under Deno',
  );
  // fetch decompresses the body and keeps the header that says it came compressed.
  const zipped = await fetch(`${base}/api/v1/openapi.json`, { headers: { 'accept-encoding': 'gzip' } });
  check(
    zipped.headers.get('content-encoding') === 'gzip' &&
      ((await zipped.json()) as { openapi: string }).openapi === '3.1.0',
    'the OpenAPI document is sent gzip-compressed under Deno',
  );
  const docs = await fetch(`${base}/api/v1/docs/swagger-ui-bundle.js`);
  check(
    docs.status === 200 && (await docs.text()).length > 100_000,
    'the interactive docs assets are served under Deno',
  );

  // A webhook under Deno: the secret is sealed with WebCrypto, the events queued in SQL.
  const hook = await fetch(`${base}/api/v1/organizations/${org.id}/webhooks`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ url: 'https://hooks.example.com/fleet', events: ['device.activated', 'order.applied'] }),
  });
  const webhook = (await hook.json()) as { id: string; secret: string };
  check(hook.status === 201 && webhook.secret.startsWith('whsec_'), 'a webhook is created under Deno');

  // The agent's path under Deno: the check-in reads its body through the web Request here
  // (api/http/body.ts reads Node's IncomingMessage only under Node).
  const code = (
    (await (await fetch(`${base}/api/v1/organizations/${org.id}/activation-code`, { headers })).json()) as {
      code: string;
    }
  ).code;
  const json = { 'content-type': 'application/json' };
  const activated = await fetch(`${base}/api/v1/activate`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ code, serial: 'DENO-0001' }),
  });
  check(activated.status === 200, 'an installer activates a device under Deno');
  const deviceId = ((await activated.json()) as { device_id: string }).device_id;
  const resolved = await fetch(`${base}/api/v1/templates/6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d01/resolve`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ code, device_id: deviceId }),
  });
  const bootstrapToken = ((await resolved.json()) as { agent: { bootstrap_token: string } }).agent.bootstrap_token;
  const bootstrapped = await fetch(`${base}/api/v1/agent/bootstrap`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ device_id: deviceId, bootstrap_token: bootstrapToken }),
  });
  check(bootstrapped.status === 201, 'the agent bootstraps under Deno');
  const secret = ((await bootstrapped.json()) as { agent_secret: string }).agent_secret;
  const agent = { authorization: `Bearer ${secret}`, ...json };
  const checkedInAt = Date.now();
  const checkin = await fetch(`${base}/api/v1/agent/checkin`, {
    method: 'POST',
    headers: agent,
    body: JSON.stringify({ agent_version: '1.0.0', hardware: { cpu: 'Deno CPU' } }),
  });
  const state = (await checkin.json()) as { device_id: string; auftraege: Array<{ merkmal: string; state: string }> };
  check(
    checkin.status === 200 && state.device_id === deviceId && state.auftraege.length > 0,
    'the agent checks in under Deno and gets its auftraege',
  );
  const answeredAt = Date.now();
  let heartbeat = await lastCheckin(deviceId);
  while (heartbeat === null && Date.now() - answeredAt < 2000) {
    await new Promise((r) => setTimeout(r, 50));
    heartbeat = await lastCheckin(deviceId);
  }
  check(
    heartbeat !== null && heartbeat >= checkedInAt && heartbeat <= answeredAt,
    "the check-in's time is written by the batched heartbeat within 2 s under Deno",
  );

  // The portal under Deno: the login page, a session from an organization key, a device page.
  const portalKey = (
    (await (
      await fetch(`${base}/api/v1/organizations/${org.id}/api-keys`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'Deno Portal', role: 'admin' }),
      })
    ).json()) as { key: string }
  ).key;
  const login = await fetch(`${base}/portal/login`);
  const loginHtml = await login.text();
  check(login.status === 200 && loginHtml.includes('API-Schlüssel'), 'the portal login page is served under Deno');
  const loginCsrf = /name="_csrf" value="([^"]+)"/.exec(loginHtml)![1]!;
  const loginCookie = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const signedIn = await fetch(`${base}/portal/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: loginCookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: loginCsrf, key: portalKey }).toString(),
  });
  const sessionCookie = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c!.startsWith('fleet_session='));
  check(signedIn.status === 303 && sessionCookie !== undefined, 'a portal session opens under Deno');
  const devicePage = await fetch(`${base}/portal/devices/${deviceId}`, { headers: { cookie: sessionCookie! } });
  const deviceHtml = await devicePage.text();
  check(
    devicePage.status === 200 && deviceHtml.includes('DENO-0001') && deviceHtml.includes('Warum?'),
    'the portal device page is served under Deno',
  );
  const hardware = await fetch(`${base}/api/v1/devices/${deviceId}/hardware`, { headers });
  check(JSON.stringify(await hardware.json()).includes('Deno CPU'), "the check-in's hardware is stored under Deno");
  const empty = await fetch(`${base}/api/v1/agent/checkin`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}` },
  });
  check(empty.status === 200, 'a check-in without a body is answered under Deno');
  const report = await fetch(`${base}/api/v1/agent/report`, {
    method: 'POST',
    headers: agent,
    body: JSON.stringify({ entries: [{ merkmal: state.auftraege[0]!.merkmal, event: 'applied' }] }),
  });
  check(report.status === 200, 'the agent reports under Deno');
  const deliveries = (await (await fetch(`${base}/api/v1/webhooks/${webhook.id}/deliveries`, { headers })).json()) as {
    items: Array<{ event: string; status: string }>;
  };
  check(
    deliveries.items.map((d) => `${d.event} ${d.status}`).join(',') ===
      'order.applied pending,device.activated pending',
    'the activation and the report queued their webhook deliveries under Deno',
  );
  const live = await fetch(`${base}/api/v1/health/live`);
  const liveBody = (await live.json()) as { status: string };
  check(live.status === 200 && liveBody.status === 'ok', 'the liveness probe answers under Deno');
  const metrics = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
  const text = await metrics.text();
  check(
    metrics.status === 200 && text.includes('fleet_agent_checkins_total{result="ok"} 2'),
    'GET /metrics counts the check-ins under Deno',
  );
  check(
    text.includes('fleet_devices{state="active"} 1') && text.includes('process_resident_memory_bytes'),
    'GET /metrics has the fleet gauges and process metrics under Deno',
  );
  check(/^process_resident_memory_bytes [1-9]\d*$/m.test(text), 'process_resident_memory_bytes is not 0 under Deno');
  check(/^fleet_db_queue_patched 1$/m.test(text), "Deno loads postgres.js's fixed queue (fleet_db_queue_patched 1)");
  check(
    /^fleet_checkin_reads_total\{source="primary"\} [1-9]/m.test(text) && /^fleet_heartbeats_pending \d+$/m.test(text),
    'GET /metrics has the check-in path metrics under Deno',
  );
  // A check-in held in flight (half its body sent) fills the bound: the next is refused by
  // the front before the app, with the contract's 503; the held one is answered after.
  const held = postInTwoParts(port, '/api/v1/agent/checkin', agent, '{"agent_version":"1.0"}');
  let refused: Response | null = null;
  for (let i = 0; i < 50 && !refused; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const res = await fetch(`${base}/api/v1/agent/checkin`, { method: 'POST', headers: agent, body: '{}' });
    if (res.status === 503) refused = res;
    else await res.arrayBuffer();
  }
  const retryAfter = Number(refused?.headers.get('retry-after'));
  const refusedBody = refused ? ((await refused.json()) as { error: string; message: string }) : null;
  check(
    refusedBody?.error === 'service_unavailable' &&
      refusedBody.message === `the service is busy; retry in ${retryAfter} seconds` &&
      retryAfter >= 30 &&
      retryAfter <= 60,
    'a check-in past the in-flight bound gets 503 with a jittered Retry-After under Deno',
  );
  check(/^HTTP\/1\.1 200/.test(await held.finish()), 'the check-in in flight is answered under Deno');
  const shed = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })).text();
  check(
    /^fleet_agent_checkins_total\{result="shed"\} 1$/m.test(shed),
    'the refused check-in is counted as shed under Deno',
  );
  const inUse = spawnSync(join(root, 'node_modules', '.bin', 'deno'), ['task', '--quiet', 'api'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      ADMIN_TOKEN: adminToken,
      ISO_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
      PORT: String(port),
    },
    encoding: 'utf8',
  });
  check(
    inUse.status === 1 && inUse.stderr === `start-up failed: PORT ${port} is in use by another process\n`,
    `a PORT in use stops Deno with Node's one line and exit 1 (got ${inUse.status}: ${JSON.stringify(inUse.stderr)})`,
  );
  const bad = spawnSync(join(root, 'node_modules', '.bin', 'deno'), ['task', '--quiet', 'api'], {
    cwd: root,
    env: { ...process.env, PORT: '0x10' },
    encoding: 'utf8',
  });
  check(
    bad.status === 2 && /^invalid configuration: PORT: [^\n]*\n$/.test(bad.stderr),
    'a bad PORT stops Deno with one line and exit 2',
  );
  // The stop: one request finishes during the drain, one outlasts SHUTDOWN_DRAIN_SECONDS (2 s).
  const organization = JSON.stringify({ name: 'Drain GmbH' });
  const json2 = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };
  const finishes = postInTwoParts(port, '/api/v1/organizations', json2, organization);
  const outlasts = postInTwoParts(port, '/api/v1/organizations', json2, organization);
  await new Promise((r) => setTimeout(r, 300));
  const lastAt = Date.now();
  const last = await fetch(`${base}/api/v1/agent/checkin`, { method: 'POST', headers: agent, body: '{}' });
  check(last.status === 200, 'a check-in just before the stop is answered');
  const exited = new Promise<number | null>((resolve) => deno.once('exit', (code) => resolve(code)));
  const stoppedAt = Date.now();
  deno.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 300));
  const head = await finishes.finish();
  check(
    /^HTTP\/1\.1 201/.test(head) && /\r\nconnection: close/i.test(head),
    'a request in flight at the stop is answered, with connection: close, under Deno',
  );
  check((await exited) === 0, 'SIGTERM stops the Deno server with exit 0');
  const stopMs = Date.now() - stoppedAt;
  outlasts.close();
  check(
    stopMs >= 1500 && stopMs < 8000 && output.includes('drain time over'),
    `the stop waits SHUTDOWN_DRAIN_SECONDS (2 s) for a request that does not finish, not 10 s (took ${stopMs} ms)`,
  );
  const written = await lastCheckin(deviceId);
  check(
    written !== null && written >= lastAt && output.includes('stop: heartbeats written'),
    'the stop writes the pending heartbeats before the pool closes under Deno',
  );
  console.log(`deno smoke: all ${checks} checks passed`);
} finally {
  if (deno.exitCode === null) deno.kill('SIGTERM');
  await db.end();
  await embedded?.stop();
  await rm(stateDir, { recursive: true, force: true });
}
