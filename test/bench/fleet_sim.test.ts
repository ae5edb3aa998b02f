/**
 * The fleet simulator's agent (fleet_agent.ts) speaks the agent protocol as the service
 * expects it: bootstrap once, a 200 and then 304s with the ETag, a report entry per order
 * after a 200, a retry after a 304 when the last apply failed, Retry-After waited out on a
 * 503, the poll interval after no answer; device actions run once each after the apply,
 * a lost start or result answer retried from the agent's own record. Run against an
 * in-process app with a handful of devices; behaviour only, never timing. And the
 * simulator itself (fleet_sim.ts), run small as `npm run bench:fleet` runs it: its rollouts
 * complete, and pause in ring 0 when failing; its changes that alter no answer cost no 200
 * (scenario amplification); every action queued with part of the fleet offline runs once
 * and none is lost (scenario actions).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { activateDevice, resolveDevice } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { type AgentAnswer, type AgentStep, type AgentTransport, SimAgent } from './fleet_agent.ts';

const ctx = useTestApp();

interface Sent {
  path: string;
  headers: Record<string, string>;
  body: any;
  status: number | null;
  answer: string | null;
  /** The service answered, and the answer never reached the agent. */
  dropped?: boolean;
}

/**
 * A transport over the in-process app that records every request and can answer in its
 * place: `refuse`, nothing reaches the service; `drop`, the service takes the request and
 * its answer is lost on the way back.
 */
function recordingTransport(sent: Sent[], intercept?: (path: string) => AgentAnswer | 'refuse' | 'drop' | undefined) {
  const send: AgentTransport = async (path, headers, body) => {
    const forced = intercept?.(path);
    const parsed = body === '' ? null : JSON.parse(body);
    if (forced === 'refuse') {
      sent.push({ path, headers, body: parsed, status: null, answer: null });
      throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    }
    if (forced === 'drop') {
      const res = await answerOf(path, headers, body);
      sent.push({ path, headers, body: parsed, status: res.status, answer: res.body, dropped: true });
      throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    }
    const res = forced ?? (await answerOf(path, headers, body));
    sent.push({ path, headers, body: parsed, status: res.status, answer: res.body });
    return res;
  };
  return send;
}

async function answerOf(path: string, headers: Record<string, string>, body: string): Promise<AgentAnswer> {
  const res = await ctx.app.request(path, { method: 'POST', headers, body });
  return {
    status: res.status,
    etag: res.headers.get('etag'),
    retryAfter: res.headers.get('retry-after'),
    body: await res.text(),
  };
}

async function newDevice(organizationId: string): Promise<{ deviceId: string; token: string }> {
  const activated = await activateDevice(ctx, organizationId);
  const blueprint = await resolveDevice(ctx, { code: activated.code, device_id: activated.device_id });
  return { deviceId: activated.device_id, token: blueprint.agent.bootstrap_token };
}

/** A short `script` action queued for the device as the operator; its id. */
async function queueScript(deviceId: string): Promise<string> {
  const res = await ctx.request('POST', `/api/v1/devices/${deviceId}/actions`, {
    body: { type: 'script', parameters: { interpreter: 'sh', script: 'sleep 0.01' } },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

async function actionOf(id: string): Promise<{ status: string; result: unknown }> {
  const res = await ctx.request('GET', `/api/v1/actions/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

/** The requests as `path status`, the action paths shortened and their ids named by `labels`. */
function steps(sent: Sent[], labels: Record<string, string>): string[] {
  return sent.map((s) => {
    const path = s.path.replace('/api/v1/agent/', '').replace(/[0-9a-f-]{36}/, (id) => labels[id] ?? id);
    return `${path} ${s.status ?? 'no answer'}${s.dropped ? ' (answer lost)' : ''}`;
  });
}

/** Always the same draw, so a jittered wait is exactly a tenth more than asked. */
const maxJitter = () => 0.999_999;

describe('the fleet simulator agent', () => {
  it('bootstraps once, gets a 200 and reports every order, then 304s with its ETag', async () => {
    const org = await createOrganization(ctx);
    const devices = await Promise.all([1, 2, 3].map(() => newDevice(org.id)));
    for (const { deviceId, token } of devices) {
      const sent: Sent[] = [];
      const observed: Array<[AgentStep, number | null]> = [];
      const agent = new SimAgent(deviceId, token, recordingTransport(sent), {
        pollSeconds: 10,
        observe: (step, status) => observed.push([step, status]),
      });

      const first = await agent.cycle();
      expect(first.checkin).toBe(200);
      expect(sent.map((s) => s.path)).toEqual([
        '/api/v1/agent/bootstrap',
        '/api/v1/agent/checkin',
        '/api/v1/agent/report',
      ]);
      expect(sent[0]!.body).toEqual({ device_id: deviceId, bootstrap_token: token });
      expect(sent[0]!.status).toBe(201);
      expect(sent[1]!.headers['if-none-match']).toBeUndefined();
      expect(sent[1]!.headers.authorization).toBe(`Bearer ${agent.secret}`);
      // One entry per order of the 200, each the outcome its state asks for.
      const orders = JSON.parse(sent[1]!.answer!).auftraege as Array<{ merkmal: string; state: string }>;
      const entries = sent[2]!.body.entries as Array<{ merkmal: string; event: string; detail: string }>;
      expect(orders.length).toBeGreaterThan(0);
      expect(entries.map((e) => [e.merkmal, e.event])).toEqual(
        orders.map((o) => [o.merkmal, o.state === 'present' ? 'applied' : 'removed']),
      );
      expect(sent[2]!.status).toBe(200);
      const [events] = await ctx.sql<Array<{ n: number }>>`
        select count(*)::int as n from device_merkmal_events where device_id = ${deviceId}`;
      expect(events!.n).toBe(entries.length);
      expect(first.delayMs).toBeGreaterThanOrEqual(10_000);
      expect(first.delayMs).toBeLessThanOrEqual(11_000);

      const etag = agent.etag;
      expect(etag).toMatch(/^".+"$/);
      const second = await agent.cycle();
      const third = await agent.cycle();
      expect([second.checkin, third.checkin]).toEqual([304, 304]);
      // No second bootstrap, no report after a 304: only check-ins with the ETag.
      expect(sent.slice(3).map((s) => [s.path, s.headers['if-none-match']])).toEqual([
        ['/api/v1/agent/checkin', etag],
        ['/api/v1/agent/checkin', etag],
      ]);
      expect(observed.filter(([step]) => step === 'bootstrap')).toEqual([['bootstrap', 201]]);
    }
  });

  it('reports the chosen Merkmal failed, with a detail, when it fails', async () => {
    const org = await createOrganization(ctx);
    const { deviceId, token } = await newDevice(org.id);
    const sent: Sent[] = [];
    // Which Merkmal: the first order the service will send.
    const probe = new SimAgent(deviceId, token, recordingTransport(sent), { pollSeconds: 10 });
    await probe.cycle();
    const orders = sent[2]!.body.entries as Array<{ merkmal: string; event: string }>;
    const failing = orders[0]!.merkmal;
    const expectedFailure = orders[0]!.event === 'applied' ? 'apply_failed' : 'remove_failed';

    // The same device again with its ETag forgotten: a 200, every order, the chosen one failing.
    const again: Sent[] = [];
    const agent = new SimAgent(deviceId, token, recordingTransport(again), {
      pollSeconds: 10,
      failMerkmal: failing,
      failProbability: 1,
    });
    agent.secret = probe.secret;
    expect((await agent.cycle()).checkin).toBe(200);
    const entries = again[1]!.body.entries as Array<{ merkmal: string; event: string; detail: string }>;
    expect(entries.map((e) => e.merkmal)).toEqual(orders.map((o) => o.merkmal));
    const failed = entries.filter((e) => e.event.endsWith('_failed'));
    expect(failed).toEqual([{ merkmal: failing, event: expectedFailure, detail: expect.stringContaining(failing) }]);
    expect(again[1]!.status).toBe(200);
  });

  it('after a 304 applies again only when the last apply failed, and reports what is new and what failed', async () => {
    const org = await createOrganization(ctx);
    const { deviceId, token } = await newDevice(org.id);
    const sent: Sent[] = [];
    let now = 1_000_000;
    const agent = new SimAgent(deviceId, token, recordingTransport(sent), { pollSeconds: 10, now: () => now });
    await agent.cycle();
    const orders = sent[2]!.body.entries as Array<{ merkmal: string; event: string }>;
    expect(orders.length).toBeGreaterThan(1);
    const failing = orders[0]!.merkmal;
    const state = orders[0]!.event === 'applied' ? 'present' : 'absent';
    expect(agent.ran(failing, state)).toBe(true);
    expect(agent.runs.get(failing)).toHaveLength(1);

    // The role breaks: a 304 with the last apply fine runs nothing.
    agent.failing(failing, 1);
    const plain = sent.length;
    expect((await agent.cycle()).checkin).toBe(304);
    expect(sent.slice(plain).map((s) => s.path)).toEqual(['/api/v1/agent/checkin']);

    // The daily apply: every order runs again; only the failure is reported (the rest is not new).
    now += 86_400_000;
    const daily = sent.length;
    expect((await agent.cycle()).checkin).toBe(304);
    expect(sent.slice(daily).map((s) => s.path)).toEqual(['/api/v1/agent/checkin', '/api/v1/agent/report']);
    expect(sent.at(-1)!.body.entries.map((e: { merkmal: string; event: string }) => [e.merkmal, e.event])).toEqual([
      [failing, state === 'present' ? 'apply_failed' : 'remove_failed'],
    ]);
    expect(agent.runs.get(failing)).toHaveLength(2);

    // It failed, so the next 304 retries; still failing, the failure is reported again.
    const retry = sent.length;
    await agent.cycle();
    expect(sent.slice(retry).map((s) => s.path)).toEqual(['/api/v1/agent/checkin', '/api/v1/agent/report']);
    expect(sent.at(-1)!.body.entries.map((e: { event: string }) => e.event)).toEqual([
      state === 'present' ? 'apply_failed' : 'remove_failed',
    ]);

    // Mended: the retry succeeds and reports that outcome alone, new against the failure.
    agent.failing(undefined, 0);
    const mended = sent.length;
    await agent.cycle();
    expect(sent.at(-1)!.body.entries.map((e: { merkmal: string; event: string }) => [e.merkmal, e.event])).toEqual([
      [failing, state === 'present' ? 'applied' : 'removed'],
    ]);
    expect(sent.slice(mended).map((s) => s.status)).toEqual([304, 200]);

    // Nothing failed last: a 304 runs nothing again.
    const quiet = sent.length;
    await agent.cycle();
    expect(sent.slice(quiet).map((s) => s.path)).toEqual(['/api/v1/agent/checkin']);
  });

  it('after a 200 with the state it last applied runs and reports nothing; a changed one it applies and reports', async () => {
    const org = await createOrganization(ctx);
    const { deviceId, token } = await newDevice(org.id);
    const sent: Sent[] = [];
    const agent = new SimAgent(deviceId, token, recordingTransport(sent), { pollSeconds: 10 });
    await agent.cycle();
    expect(agent.applies).toBe(1);

    // A tag the service does not know (another process's, an older format's): a 200, same state.
    agent.etag = '"0"';
    const same = sent.length;
    expect((await agent.cycle()).checkin).toBe(200);
    expect(sent.slice(same).map((s) => s.path)).toEqual(['/api/v1/agent/checkin']);
    expect(agent.applies).toBe(1);

    const res = await ctx.request('POST', `/api/v1/devices/${deviceId}/catalog/qgis/select`);
    expect(res.status).toBe(200);
    const changed = sent.length;
    expect((await agent.cycle()).checkin).toBe(200);
    expect(sent.slice(changed).map((s) => s.path)).toEqual(['/api/v1/agent/checkin', '/api/v1/agent/report']);
    expect(agent.applies).toBe(2);
    expect(agent.ran('qgis', 'present')).toBe(true);
  });

  it('waits out Retry-After on a 503, and the poll interval when nothing answers', async () => {
    const org = await createOrganization(ctx);
    const { deviceId, token } = await newDevice(org.id);
    const sent: Sent[] = [];
    let mode: 'shed' | 'refuse' | 'pass' = 'pass';
    const agent = new SimAgent(
      deviceId,
      token,
      recordingTransport(sent, (path) => {
        if (path !== '/api/v1/agent/checkin' || mode === 'pass') return undefined;
        if (mode === 'refuse') return 'refuse';
        return { status: 503, etag: null, retryAfter: '47', body: '{"error":{"code":"service_unavailable"}}' };
      }),
      { pollSeconds: 10, random: maxJitter },
    );
    await agent.cycle();
    const etag = agent.etag;

    mode = 'shed';
    const shed = await agent.cycle();
    expect(shed.checkin).toBe(503);
    // 47 s and at most a tenth more, not the poll interval.
    expect(shed.delayMs).toBe(Math.round(47_000 * (1 + maxJitter() * 0.1)));

    mode = 'refuse';
    const refused = await agent.cycle();
    expect(refused.checkin).toBeNull();
    expect(refused.delayMs).toBe(Math.round(10_000 * (1 + maxJitter() * 0.1)));

    // Back: the ETag kept through both, so the service answers 304.
    mode = 'pass';
    expect((await agent.cycle()).checkin).toBe(304);
    expect(sent.at(-1)!.headers['if-none-match']).toBe(etag);
    expect(sent.filter((s) => s.path === '/api/v1/agent/bootstrap')).toHaveLength(1);
  });

  it('gives up for an hour when refused for good (a second bootstrap: 409)', async () => {
    const org = await createOrganization(ctx);
    const { deviceId, token } = await newDevice(org.id);
    const first = new SimAgent(deviceId, token, recordingTransport([]), { pollSeconds: 10 });
    expect((await first.cycle()).checkin).toBe(200);

    // The same token again, as an agent that never saw the answer to its bootstrap would send it.
    const sent: Sent[] = [];
    const again = new SimAgent(deviceId, token, recordingTransport(sent), { pollSeconds: 10, random: maxJitter });
    const refused = await again.cycle();
    expect(sent.map((s) => [s.path, s.status])).toEqual([['/api/v1/agent/bootstrap', 409]]);
    expect(again.refused).toBe(409);
    expect(again.settled).toBe(false);
    expect(refused).toEqual({ checkin: null, delayMs: Math.round(3_600_000 * (1 + maxJitter() * 0.1)) });
    expect(first.refused).toBeNull();
    expect(first.settled).toBe(true);
  });

  it('runs a delivered action once, after the apply; a result whose answer was lost is sent again, and its 409 action_finished counts as delivered', async () => {
    const org = await createOrganization(ctx);
    const { deviceId, token } = await newDevice(org.id);
    const sent: Sent[] = [];
    let dropResult = true;
    let replay: AgentAnswer | null = null;
    const agent = new SimAgent(
      deviceId,
      token,
      recordingTransport(sent, (path) => {
        if (path === '/api/v1/agent/checkin' && replay !== null) return replay;
        if (path.endsWith('/result') && dropResult) {
          dropResult = false;
          return 'drop';
        }
        return undefined;
      }),
      { pollSeconds: 10, actionRunMs: 1 },
    );
    await agent.cycle();
    expect(agent.settled).toBe(true);

    // A change of state and an action in the same cycle: the apply and its report first.
    expect((await ctx.request('POST', `/api/v1/devices/${deviceId}/catalog/qgis/select`)).status).toBe(200);
    const id = await queueScript(deviceId);
    const labels = { [id]: 'A' };
    const from = sent.length;
    expect((await agent.cycle()).checkin).toBe(200);
    expect(steps(sent.slice(from), labels)).toEqual([
      'checkin 200',
      'report 200',
      'actions/A/start 204',
      'actions/A/result 204 (answer lost)',
    ]);
    expect(JSON.parse(sent[from]!.answer!).actions.map((a: { id: string }) => a.id)).toEqual([id]);
    expect(sent.at(-1)!.body).toMatchObject({ exit_code: 0, output: expect.any(String), details: {} });
    expect(agent.actions.get(id)).toMatchObject({ state: 'ran', resultRetries: 1 });
    expect(agent.actionRuns.get(id) ?? 0).toBe(1);
    expect(agent.settled).toBe(false);
    expect(await actionOf(id)).toMatchObject({ status: 'succeeded', result: { exit_code: 0 } });

    // Next cycle: the spooled result first (taken before: 409), then the check-in, whose answer no longer carries it.
    const retry = sent.length;
    expect((await agent.cycle()).checkin).toBe(200);
    expect(steps(sent.slice(retry), labels)).toEqual(['actions/A/result 409', 'checkin 200']);
    expect(JSON.parse(sent[retry]!.answer!).error).toBe('action_finished');
    expect(JSON.parse(sent.at(-1)!.answer!).actions).toEqual([]);
    expect(agent.actions.get(id)).toMatchObject({ state: 'done', outcome: 'finished_on_retry' });
    expect(agent.actionRuns.get(id) ?? 0).toBe(1);
    expect(agent.settled).toBe(true);

    // An answer handing the same action over again (an old one, replayed): never started twice.
    replay = { status: 200, etag: '"replayed"', retryAfter: null, body: sent[from]!.answer! };
    const again = sent.length;
    expect((await agent.cycle()).checkin).toBe(200);
    expect(steps(sent.slice(again), labels)).toEqual(['checkin 200']);
    expect(agent.redelivered).toBe(1);
    expect(agent.actions.get(id)).toMatchObject({ state: 'done' });
    expect(agent.actionRuns.get(id) ?? 0).toBe(1);
    replay = null;
    expect(await actionOf(id)).toMatchObject({ status: 'succeeded' });
  });

  it('sends a start whose answer was lost again from its own record, though the action left the answer, and runs it once; the next waits its turn', async () => {
    const org = await createOrganization(ctx);
    const { deviceId, token } = await newDevice(org.id);
    const sent: Sent[] = [];
    let a = '';
    let dropStart = true;
    const agent = new SimAgent(
      deviceId,
      token,
      recordingTransport(sent, (path) => {
        if (a !== '' && path.endsWith(`/${a}/start`) && dropStart) {
          dropStart = false;
          return 'drop';
        }
        return undefined;
      }),
      { pollSeconds: 10, actionRunMs: 1 },
    );
    await agent.cycle();
    a = await queueScript(deviceId);
    const b = await queueScript(deviceId);
    const labels = { [a]: 'A', [b]: 'B' };

    const from = sent.length;
    expect((await agent.cycle()).checkin).toBe(200);
    expect(JSON.parse(sent[from]!.answer!).actions.map((x: { id: string }) => x.id)).toEqual([a, b]);
    expect(steps(sent.slice(from), labels)).toEqual(['checkin 200', 'actions/A/start 204 (answer lost)']);
    expect(agent.actions.get(a)).toMatchObject({ state: 'starting' });
    expect(agent.actionRuns.get(a) ?? 0).toBe(0);
    expect(agent.actions.has(b)).toBe(false);
    expect([(await actionOf(a)).status, (await actionOf(b)).status]).toEqual(['running', 'delivered']);

    const next = sent.length;
    expect((await agent.cycle()).checkin).toBe(200);
    expect(JSON.parse(sent[next]!.answer!).actions.map((x: { id: string }) => x.id)).toEqual([b]);
    expect(steps(sent.slice(next), labels)).toEqual([
      'checkin 200',
      'actions/A/start 204',
      'actions/A/result 204',
      'actions/B/start 204',
      'actions/B/result 204',
    ]);
    expect([agent.actionRuns.get(a), agent.actionRuns.get(b)]).toEqual([1, 1]);
    expect([(await actionOf(a)).status, (await actionOf(b)).status]).toEqual(['succeeded', 'succeeded']);
    expect(agent.settled).toBe(true);
  });

  it('does not run an action canceled before its start reached the service (409 action_not_pending)', async () => {
    const org = await createOrganization(ctx);
    const { deviceId, token } = await newDevice(org.id);
    const sent: Sent[] = [];
    let refuseStart = true;
    const agent = new SimAgent(
      deviceId,
      token,
      recordingTransport(sent, (path) => (path.endsWith('/start') && refuseStart ? 'refuse' : undefined)),
      { pollSeconds: 10, actionRunMs: 1 },
    );
    await agent.cycle();
    const id = await queueScript(deviceId);
    const labels = { [id]: 'C' };
    const from = sent.length;
    expect((await agent.cycle()).checkin).toBe(200);
    expect(steps(sent.slice(from), labels)).toEqual(['checkin 200', 'actions/C/start no answer']);
    expect(agent.settled).toBe(false);

    expect((await ctx.request('POST', `/api/v1/actions/${id}/cancel`)).status).toBe(200);
    refuseStart = false;
    const next = sent.length;
    expect((await agent.cycle()).checkin).toBe(200);
    expect(steps(sent.slice(next), labels)).toEqual(['checkin 200', 'actions/C/start 409']);
    expect(agent.actions.get(id)).toMatchObject({ state: 'done', outcome: 'start 409 action_not_pending' });
    expect(agent.actionRuns.get(id) ?? 0).toBe(0);
    expect(agent.settled).toBe(true);
    expect(await actionOf(id)).toMatchObject({ status: 'canceled', result: null });
  });
});

interface RolloutFigures {
  created: boolean;
  status: string;
  paused_reason: string | null;
  current_ring: number;
  devices_altered: number;
  rings: Array<{ ring: number; devices: number; opened_after_seconds: number | null; ran: number }>;
  completed_after_seconds: number | null;
  ran_outside_opened_rings: number;
  ran_before_ring_opened: number;
  ran_outside_rollout: number;
}

/** Runs the simulator in a process of its own; resolves with its exit code, output and closing figures. */
function runSimulator(args: string[], timeoutMs: number) {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  return new Promise<{ code: number | null; output: string; figures: Record<string, any> | null }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/bench/fleet_sim.ts', ...args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    // SIGINT: the simulator stops its service and database on the way out.
    const timer = setTimeout(() => child.kill('SIGINT'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      const line = output.split('\n').find((l) => l.startsWith('fleet-sim figures: '));
      resolve({ code, output, figures: line ? JSON.parse(line.slice('fleet-sim figures: '.length)) : null });
    });
  });
}

describe('the fleet simulator, small', () => {
  it('completes a rollout over the fleet in rings, and pauses a failing one in ring 0 before any later ring runs it', async () => {
    // Rings of 20/60/100 % put about ten of 50 devices in ring 0, never none; every order
    // of the failing rollout's Merkmal fails, so it pauses as soon as ring 0 has reported.
    const run = await runSimulator(
      [
        '--devices=50',
        '--poll-seconds=1',
        '--scenario=rollout,rollout-failing',
        '--rings=20,60,100',
        '--soak-seconds=0',
        '--fail-probability=1',
        // A device shed under load comes back in seconds, not the service's 30–60.
        '--retry-after-seconds=2',
      ],
      // About a minute on a quiet host; a busy one (other sessions' tests) takes up to three.
      280_000,
    );
    expect(run.code, run.output).toBe(0);
    expect(run.figures, run.output).not.toBeNull();
    const done = run.figures!.rollout as RolloutFigures;
    expect(done.created, run.output).toBe(true);
    expect(done.status, run.output).toBe('completed');
    expect(done.devices_altered).toBe(50);
    expect(done.rings.map((r) => r.opened_after_seconds !== null)).toEqual([true, true, true]);
    expect(done.rings.reduce((s, r) => s + r.ran, 0)).toBe(50);
    expect(done.completed_after_seconds).not.toBeNull();
    expect(done.ran_before_ring_opened).toBe(0);
    expect(done.ran_outside_rollout).toBe(0);

    const paused = run.figures!['rollout-failing'] as RolloutFigures;
    expect(paused.created, run.output).toBe(true);
    expect([paused.status, paused.paused_reason, paused.current_ring], run.output).toEqual([
      'paused',
      'failure_ratio',
      0,
    ]);
    expect(paused.rings[0]!.devices).toBeGreaterThan(0);
    expect(paused.rings[0]!.ran).toBe(paused.rings[0]!.devices);
    expect(paused.rings.slice(1).map((r) => [r.opened_after_seconds, r.ran])).toEqual([
      [null, 0],
      [null, 0],
    ]);
    expect(paused.ran_outside_opened_rings).toBe(0);
    expect(paused.ran_before_ring_opened).toBe(0);
  }, 300_000);

  it('amplification: an empty group, a rename and its deletion cost no 200, a selection at a unit of 1 % exactly its devices', async () => {
    const run = await runSimulator(
      ['--devices=300', '--poll-seconds=1', '--scenario=amplification', '--retry-after-seconds=2'],
      // Under a minute on a quiet host.
      200_000,
    );
    expect(run.code, run.output).toBe(0);
    const figures = run.figures?.amplification as
      | { unit_devices: number; changes: Array<Record<string, number | string>> }
      | undefined;
    expect(figures, run.output).toBeDefined();
    expect(figures!.unit_devices).toBe(3);
    expect(
      figures!.changes.map((c) => [c.target, c.checkins_200, c.applies, c.reports, c.applied_outside, c.missed]),
      run.output,
    ).toEqual([
      [0, 0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0, 0],
      [3, 3, 3, 3, 0, 0],
    ]);
  }, 220_000);

  it('actions: with 30 % of the fleet offline when they are queued and result answers lost, every action runs once and none is lost', async () => {
    // A fifth of the result answers lost (the figure's run uses 5 %), so the retry is met in a run this small.
    const run = await runSimulator(
      ['--devices=100', '--poll-seconds=1', '--scenario=actions', '--retry-after-seconds=2', '--drop-results=0.2'],
      // Under a minute on a quiet host.
      200_000,
    );
    expect(run.code, run.output).toBe(0);
    const f = run.figures?.actions as Record<string, any> | undefined;
    expect(f, run.output).toBeDefined();
    expect([f!.devices, f!.offline, f!.queued, f!.not_created]).toEqual([100, 30, 100, 0]);
    expect(f!.all_ended, run.output).toBe(true);
    expect(f!.run_twice).toBe(0);
    expect(f!.lost).toBe(0);
    expect([f!.expired, f!.canceled, f!.failed]).toEqual([0, 0, 0]);
    expect(f!.run).toBe(100);
    expect([f!.results_accepted, f!.succeeded]).toEqual([100, 100]);
    expect([f!.ran_not_succeeded, f!.succeeded_not_ran]).toEqual([0, 0]);
    // Each action whose result answer was lost was sent again and answered 409 once.
    expect(f!.result_answers_dropped).toBeGreaterThan(0);
    expect(f!.result_409_on_retry).toBeGreaterThan(0);
    expect(f!.result_409_on_retry).toBeLessThanOrEqual(f!.result_answers_dropped);
    expect(f!.answers.result_409).toBe(f!.result_409_on_retry);
    expect(f!.answers.start_204).toBe(100);
  }, 220_000);
});
