/**
 * A revoke takes effect at once: revoking an organization key, signing a portal session
 * out and deprovisioning a device answer within a second however many requests use the
 * credential and however long those take, and no request that starts after the answer is
 * served with it. Requests already in flight may still finish.
 */
import { describe, expect, it } from 'vitest';
import { createSql } from '../../api/db/client.ts';
import { useTestApp } from '../support/app.ts';
import { createApiKey } from '../support/access.ts';
import { enrollAgent } from '../support/agent.ts';
import { createOrganization } from '../support/builders.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

/** How long a peer holds the organization's row in the runs with stalled writes: longer than the revoke may take. */
const STALL_MS = 1200;

interface Use {
  /** Whether the credential was accepted. */
  served: boolean;
  /** How a request was answered, for the refusals' check: e.g. `401`, `303 /portal/login`. */
  answer: string;
}

interface Run {
  latency: number;
  revokeAnswer: string;
  /** Requests served that started before the revoke answered. */
  servedBefore: number;
  /** Requests that started after the revoke answered, and how many of those were served. */
  late: number;
  lateServed: number;
  lateAnswers: string[];
}

/**
 * `clients` loops call `use` without pause; once each has had an answer and they have
 * overlapped for a moment, `revoke` runs (with `stall` held meanwhile, when given, and
 * released at the answer), and the clients go on for a moment after its answer.
 */
async function hammerAndRevoke(
  clients: number,
  use: (client: number, i: number) => Promise<Use>,
  revoke: () => Promise<string>,
  stall?: () => Promise<() => Promise<void>>,
): Promise<Run> {
  const outcomes: Array<Use & { startedAt: number }> = [];
  let stop = false;
  let answered = 0;
  let allAnswered!: () => void;
  const warm = new Promise<void>((resolve) => (allAnswered = resolve));
  const client = async (c: number) => {
    for (let i = 0; !stop; i++) {
      const startedAt = performance.now();
      outcomes.push({ startedAt, ...(await use(c, i)) });
      // A turn of the event loop between requests, so the timers (the stop, the stall) run.
      await new Promise((r) => setImmediate(r));
      if (i === 0 && ++answered === clients) allAnswered();
    }
  };
  let revokeAnswer = '';
  let answeredAt = Number.POSITIVE_INFINITY;
  let latency = 0;
  const revoker = async () => {
    await warm;
    const release = stall ? await stall() : async () => {};
    try {
      await new Promise((r) => setTimeout(r, 50));
      const start = performance.now();
      revokeAnswer = await revoke();
      answeredAt = performance.now();
      latency = answeredAt - start;
    } finally {
      // The stalled requests go on, and every client makes requests after the answer.
      await release();
    }
    await new Promise((r) => setTimeout(r, 100));
    stop = true;
  };
  await Promise.all([...Array.from({ length: clients }, (_, c) => client(c)), revoker()]);
  const late = outcomes.filter((o) => o.startedAt > answeredAt);
  return {
    latency: Math.round(latency),
    revokeAnswer,
    servedBefore: outcomes.filter((o) => o.startedAt <= answeredAt && o.served).length,
    late: late.length,
    lateServed: late.filter((o) => o.served).length,
    lateAnswers: [...new Set(late.map((o) => o.answer))].sort(),
  };
}

/**
 * A peer transaction (the operator's, say, or a slow statement) holding a row for update,
 * so the writes with the credential that update it stall in flight, for STALL_MS or until
 * released. Returns its release.
 */
async function holdRow(table: 'organizations' | 'groups', id: string): Promise<() => Promise<void>> {
  const peer = createSql(ctx.db.url, { max: 1, timeoutSeconds: 30 });
  let held!: () => void;
  const holding = new Promise<void>((r) => (held = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const done = peer.begin(async (tx) => {
    await tx`select 1 from ${tx(table)} where id = ${id} for no key update`;
    held();
    await Promise.race([released, new Promise((r) => setTimeout(r, STALL_MS))]);
  });
  await holding;
  return async () => {
    release();
    await done;
    await peer.end();
  };
}

/** The figures of all runs, for the log and the closing note. */
function figures(runs: Run[]) {
  const sorted = runs.map((r) => r.latency).sort((a, b) => a - b);
  return {
    p50: sorted[Math.floor(sorted.length / 2)],
    max: sorted.at(-1),
    late: runs.reduce((n, r) => n + r.late, 0),
    lateServed: runs.reduce((n, r) => n + r.lateServed, 0),
  };
}

function expectAtOnce(runs: Run[], revokeAnswer: string, refusals: string[]) {
  // The figures: revoke latency p50 and max over the runs, requests checked after it and served.
  console.log(JSON.stringify(figures(runs)));
  expect(runs.map((r) => r.revokeAnswer)).toEqual(runs.map(() => revokeAnswer));
  expect(runs.filter((r) => r.latency >= 1000)).toEqual([]);
  for (const run of runs) {
    // The credential worked before, and requests that started after the answer were checked.
    expect(run.servedBefore).toBeGreaterThan(0);
    expect(run.late).toBeGreaterThan(0);
    expect(run.lateServed).toBe(0);
    for (const answer of run.lateAnswers) expect(refusals).toContain(answer);
  }
}

describe('revoking an organization key', () => {
  it('answers within a second while 20 clients write and read with the key without pause, some stalled or none, and refuses every later request (20 times)', async () => {
    const runs: Run[] = [];
    for (let r = 0; r < 20; r++) {
      const org = await createOrganization(ctx);
      const key = await createApiKey(ctx, org.id, 'admin');
      const run = await hammerAndRevoke(
        20,
        async (c, i) => {
          const res =
            (c + i) % 2 === 1
              ? await ctx.request('GET', `/api/v1/organizations/${org.id}`, { token: key.key })
              : c < 8
                ? await ctx.request('PATCH', `/api/v1/organizations/${org.id}`, {
                    token: key.key,
                    body: { notizen: `use ${c}.${i}` },
                  })
                : await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, {
                    token: key.key,
                    body: { name: `Gruppe ${c}.${i}` },
                  });
          return { served: res.status < 400, answer: `${res.status}` };
        },
        async () => `${(await ctx.request('POST', `/api/v1/api-keys/${key.id}/revoke`)).status}`,
        // Every other run, the updates of the organization in flight (up to eight) stall
        // behind a peer's lock while the other writes go on.
        r % 2 === 1 ? () => holdRow('organizations', org.id) : undefined,
      );
      runs.push(run);
    }
    expectAtOnce(runs, '200', ['401']);
  }, 60_000);
});

describe('signing a portal session out', () => {
  it('answers within a second while 8 tabs read and write with the session without pause, stalled or not, and refuses every later request (6 times)', async () => {
    const runs: Run[] = [];
    for (let r = 0; r < 6; r++) {
      const org = await createOrganization(ctx);
      const key = await createApiKey(ctx, org.id, 'admin');
      const browser = new PortalClient(ctx.app, '192.0.2.40');
      expect((await browser.signIn(key.key)).status).toBe(303);
      const csrf = PortalClient.csrf((await browser.get('/portal/groups')).text);
      const group = await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, { body: { name: 'Lehrer' } });
      const tabs = Array.from({ length: 8 }, () => {
        const tab = new PortalClient(ctx.app, browser.address);
        tab.cookies = new Map(browser.cookies);
        return tab;
      });
      const run = await hammerAndRevoke(
        tabs.length,
        async (t, i) => {
          const res =
            (t + i) % 2 === 0
              ? await tabs[t]!.request('POST', `/portal/groups/${group.body.id}/rename`, {
                  _csrf: csrf,
                  name: `Tab ${t}.${i}`,
                })
              : await tabs[t]!.get('/portal/devices');
          const served = res.status === 200 || (res.status === 303 && res.location !== '/portal/login');
          return { served, answer: `${res.status}${res.location ? ` ${res.location}` : ''}` };
        },
        async () => {
          const res = await browser.request('POST', '/portal/logout', { _csrf: csrf });
          return `${res.status} ${res.location}`;
        },
        // Every other run, the renames in flight stall behind a peer's lock on the group.
        r % 2 === 1 ? () => holdRow('groups', group.body.id) : undefined,
      );
      runs.push(run);
    }
    // A read after the sign-out is sent to the sign-in page, a form post is 401.
    expectAtOnce(runs, '303 /portal/login', ['303 /portal/login', '401']);
  }, 30_000);
});

describe('deprovisioning a device', () => {
  it('answers within a second while 8 agents check in and report with its secret without pause, and refuses every later call (10 times)', async () => {
    const runs: Run[] = [];
    for (let r = 0; r < 10; r++) {
      const agent = await enrollAgent(ctx);
      const run = await hammerAndRevoke(
        8,
        async (a, i) => {
          const res =
            (a + i) % 2 === 0
              ? await ctx.request('POST', '/api/v1/agent/checkin', { token: agent.secret })
              : await ctx.request('POST', '/api/v1/agent/report', {
                  token: agent.secret,
                  body: { entries: [{ merkmal: 'firefox', event: 'applied', detail: `run ${a}.${i}` }] },
                });
          return { served: res.status < 400, answer: `${res.status} ${res.body?.error ?? ''}`.trim() };
        },
        async () => `${(await ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`)).status}`,
      );
      runs.push(run);
    }
    expectAtOnce(runs, '200', ['403 device_deprovisioned']);
  }, 30_000);
});
