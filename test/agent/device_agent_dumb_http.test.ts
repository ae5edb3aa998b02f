/**
 * The device agent with a role repository on a plain web server: git's "dumb" HTTP, which
 * refuses shallow clones and fetches. A bare repository's files are served by a static file
 * server written here (no git on the server; `git update-server-info` after each commit, as
 * such a server needs); the agent clones it in full, applies, and a later commit reaches the
 * device at its next apply, also when the desired state is as before. The agent is installed
 * by copying its files into a temporary root (FLEET_ROOT) and runs under dash with real curl,
 * git and ansible-playbook against the service on a loopback port; the image and the
 * installer are device_agent.test.ts.
 */
import { mkdtempSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, normalize, sep } from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activateDevice, resolveDevice } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { agentOnce, installAgent } from '../support/device_agent.ts';
import { git, makeRoleRepository } from '../support/role_repository.ts';
import { missingTools } from '../support/tools.ts';

const scratch = mkdtempSync(join(tmpdir(), 'fleet-agent-dumb-'));
const work = join(scratch, 'roles-work');
/** What the web server serves: the bare repository is `/roles.git`. */
const site = join(scratch, 'site');
const bare = join(site, 'roles.git');
const root = join(scratch, 'root');
const markers = join(scratch, 'markers');
const ctx = useTestApp({ agentPollIntervalSeconds: 60 });

let service: ReturnType<typeof serve> | null = null;
let webServer: Server | null = null;
/** The paths the web server was asked for. */
const served: string[] = [];
const logs: string[] = [];
let deviceId = '';
let bootstrapToken = '';

/** A static file server over `site`: GET of a file or 404, query strings ignored, as a plain web server does. */
function startWebServer(): Promise<number> {
  return new Promise((ready) => {
    webServer = createServer(async (req, res) => {
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
      served.push(path);
      const file = normalize(join(site, path));
      if (req.method !== 'GET' || !file.startsWith(site + sep)) {
        res.writeHead(404).end();
        return;
      }
      try {
        const body = await readFile(file);
        res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
      } catch {
        res.writeHead(404).end();
      }
    });
    webServer.listen(0, '127.0.0.1', () => ready((webServer!.address() as AddressInfo).port));
  });
}

/** Publishes the work repository's HEAD into the bare one, with the files a dumb server needs. */
function publish(): void {
  git(work, 'push', '-q', bare, 'HEAD:refs/heads/main');
  git(bare, 'update-server-info');
}

function once() {
  return agentOnce(
    root,
    { FLEET_RETRIES: '1', FLEET_RETRY_DELAY: '1', FIXTURE_MARKERS: markers, FIXTURE_FAIL: '' },
    logs,
  );
}

async function events(): Promise<Array<{ merkmal: string; type: string; payload: any }>> {
  const res = await ctx.request('GET', `/api/v1/devices/${deviceId}/events?limit=500`);
  expect(res.status).toBe(200);
  return res.body.items;
}

afterAll(async () => {
  await new Promise((done) => (service ? service.close(done) : done(undefined)));
  await new Promise((done) => (webServer ? webServer.close(done) : done(undefined)));
  await rm(scratch, { recursive: true, force: true });
});

describe.skipIf(missingTools('ansible-playbook', 'git', 'dash'))('the device agent over git’s dumb HTTP', () => {
  beforeAll(async () => {
    await mkdir(work);
    await mkdir(site);
    await mkdir(markers);
    await makeRoleRepository(work);
    git(scratch, 'init', '-q', '--bare', bare);
    git(bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
    publish();
    const webPort = await startWebServer();
    // Set before the first check-in: the answer and its tag carry it.
    (ctx.config as { roleRepositoryUrl: string }).roleRepositoryUrl = `http://127.0.0.1:${webPort}/roles.git`;

    const servicePort = await new Promise<number>((ready) => {
      service = serve({ fetch: ctx.app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => ready(info.port));
    });
    const org = await createOrganization(ctx);
    const activated = await activateDevice(ctx, org.id);
    const blueprint = await resolveDevice(ctx, activated);
    deviceId = activated.device_id;
    bootstrapToken = blueprint.agent.bootstrap_token;

    await installAgent(root, {
      base_url: `http://127.0.0.1:${servicePort}`,
      device_id: deviceId,
      bootstrap_token: bootstrapToken,
    });
  }, 60_000);

  it('the repository is cloned in full (shallow is refused) and every role applied', async () => {
    const first = await once();
    expect(first.code, first.stdout).toBe(0);
    expect(first.stdout).toContain('cloning in full');
    expect(first.stdout).toMatch(/roles cloned from http:\/\/127\.0\.0\.1:\d+\/roles\.git/);
    expect(served).toContain('/roles.git/info/refs');
    const checkout = join(root, 'var/lib/fleet/roles');
    expect(git(checkout, 'rev-parse', '--is-shallow-repository').trim()).toBe('false');
    expect(git(checkout, 'rev-parse', 'HEAD')).toBe(git(bare, 'rev-parse', 'HEAD'));
    expect((await readdir(markers)).sort()).toEqual(['base', 'desktop', 'firefox', 'provisioning_agent']);
    expect((await events()).find((e) => e.merkmal === 'firefox')).toMatchObject({
      type: 'applied',
      payload: { detail: { role: 'firefox', message: null } },
    });
  }, 600_000);

  it('a new commit in the repository reaches the device at its next apply, also with the desired state as before', async () => {
    await writeFile(
      join(work, 'roles/firefox/tasks/main.yml'),
      `- name: Present, second revision
  ansible.builtin.copy:
    dest: "{{ lookup('env', 'FIXTURE_MARKERS') }}/{{ role_name }}"
    content: "revision 2\\n"
    mode: "0644"
  when: fleet_state == 'present'
`,
    );
    git(work, 'commit', '-qam', 'firefox, second revision');
    publish();
    // The same desired state in a 200 (a tag the service does not give): only the commit is new.
    await writeFile(join(root, 'var/lib/fleet/etag'), '"stale"\n');

    const next = await once();
    expect(next.code, next.stdout).toBe(0);
    expect(next.stdout).toContain('roles updated from');
    expect(next.stdout).toContain('checked in: new desired state');
    const checkout = join(root, 'var/lib/fleet/roles');
    expect(git(checkout, 'rev-parse', 'HEAD')).toBe(git(bare, 'rev-parse', 'HEAD'));
    expect(await readFile(join(markers, 'firefox'), 'utf8')).toBe('revision 2\n');
    const firefox = (await events()).filter((e) => e.merkmal === 'firefox');
    expect(firefox.map((e) => e.type)).toEqual(['applied', 'applied']);
  }, 600_000);

  it('never logs the agent secret or the bootstrap token', async () => {
    const secret = (await readFile(join(root, 'var/lib/fleet/agent-secret'), 'utf8')).trim();
    const all = logs.join('\n');
    expect(all).toContain('fleet-agent: ');
    expect(secret.length).toBeGreaterThan(20);
    for (const value of [secret, bootstrapToken]) expect(all).not.toContain(value);
  }, 60_000);
});
