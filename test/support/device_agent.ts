/**
 * What the device-agent journeys (`npm run test:device`, test/vitest.device.config.ts) share:
 * the service on a loopback port that a test can stop, start again and make answer 503s; an
 * agent installed into a temporary root (FLEET_ROOT) as `install.sh late` installs it; and
 * `fleet-agent once` under dash with real curl, git and ansible-playbook, the playbook
 * wrapped so the test counts its runs (and can hold one before Ansible starts).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type HttpBindings, serve } from '@hono/node-server';
import { expect } from 'vitest';
import type { TestContext } from './app.ts';

const AGENT_FILES = fileURLToPath(new URL('../../jobs/iso/installer/agent/', import.meta.url));

/**
 * The service on a fixed loopback port (kept across a stop); `busy` answers that many
 * check-ins with 503; a request `dropAnswer` picks is served, then its connection is cut
 * before the answer leaves (an answer lost on the way back).
 */
export class AgentService {
  busy = 0;
  port = 0;
  dropAnswer: ((method: string, path: string) => boolean) | null = null;
  private server: ReturnType<typeof serve> | null = null;

  constructor(private readonly ctx: TestContext) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    await new Promise<void>((ready) => {
      this.server = serve(
        {
          fetch: async (req, env) => {
            const path = new URL(req.url).pathname;
            if (this.dropAnswer?.(req.method, path)) {
              await (await this.ctx.app.fetch(req)).arrayBuffer();
              (env as HttpBindings).incoming.socket.destroy();
              return new Response(null, { status: 500 });
            }
            if (this.busy > 0 && path === '/api/v1/agent/checkin') {
              this.busy--;
              return Response.json(
                { error: 'service_unavailable', message: 'busy' },
                { status: 503, headers: { 'retry-after': '2' } },
              );
            }
            return this.ctx.app.fetch(req);
          },
          port: this.port,
          hostname: '127.0.0.1',
        },
        () => ready(),
      );
    });
    this.port = (this.server!.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    await new Promise((done) => {
      s.close(done);
      (s as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    });
  }
}

/** What `install.sh late` installs, without the image: the agent's files and its agent.json. */
export async function installAgent(
  root: string,
  agent: { base_url: string; device_id: string; bootstrap_token: string },
): Promise<string> {
  await mkdir(join(root, 'usr/local/sbin'), { recursive: true });
  await mkdir(join(root, 'usr/local/share/fleet'), { recursive: true });
  await mkdir(join(root, 'etc/fleet'), { recursive: true });
  await copyFile(join(AGENT_FILES, 'fleet-agent'), join(root, 'usr/local/sbin/fleet-agent'));
  await copyFile(join(AGENT_FILES, 'fleet-disk-key'), join(root, 'usr/local/sbin/fleet-disk-key'));
  for (const file of ['fleet_agent_helpers.py', 'site.yml']) {
    await copyFile(join(AGENT_FILES, file), join(root, 'usr/local/share/fleet', file));
  }
  const agentJson = JSON.stringify(agent);
  await writeFile(join(root, 'etc/fleet/agent.json'), agentJson, { mode: 0o600 });
  return agentJson;
}

/**
 * ansible-playbook wrapped: one line per run in COUNT_FILE (saying whether Ansible's module
 * syslog was off); with HOLD_DIR set it waits for the test's `go` before Ansible starts.
 */
export async function writeCountingPlaybook(path: string): Promise<void> {
  await writeFile(
    path,
    [
      '#!/bin/sh',
      'echo "run $ANSIBLE_NO_TARGET_SYSLOG" >>"$COUNT_FILE"',
      'if [ -n "$HOLD_DIR" ]; then',
      '  : >"$HOLD_DIR/started"',
      '  while [ ! -e "$HOLD_DIR/go" ]; do sleep 0.1; done',
      'fi',
      'exec ansible-playbook "$@"',
      '',
    ].join('\n'),
  );
  await chmod(path, 0o755);
}

export async function countLines(file: string): Promise<number> {
  return existsSync(file) ? (await readFile(file, 'utf8')).split('\n').filter(Boolean).length : 0;
}

export interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
  wallMs: number;
  cpuMs: number;
}

/**
 * `fleet-agent once` under dash in `root` with `env` (PATH and HOME added); the children's
 * CPU time from the shell's `times`. Everything it printed goes to `logs`. The inventory reads
 * this machine's dpkg database and apt lists, but never refreshes them (FLEET_APT_GET `true`)
 * unless `env` names an apt-get.
 */
export function agentOnce(root: string, env: Record<string, string>, logs: string[]): Promise<AgentRun> {
  const agent = join(root, 'usr/local/sbin/fleet-agent');
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      'dash',
      ['-c', '"$@"; rc=$?; times >&2; exit $rc', 'timer', 'dash', agent, 'once'],
      {
        env: { PATH: process.env.PATH!, HOME: root, FLEET_ROOT: root, FLEET_APT_GET: 'true', ...env },
        timeout: 300_000,
      },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number }).code ?? null) : 0;
        logs.push(stdout, stderr);
        const times = stderr.trim().split('\n').at(-1) ?? '';
        const cpuMs = [...times.matchAll(/(\d+)m([\d.]+)s/g)].reduce(
          (sum, m) => sum + (Number(m[1]) * 60 + Number(m[2])) * 1000,
          0,
        );
        resolve({ code: typeof code === 'number' ? code : null, stdout, stderr, wallMs: Date.now() - started, cpuMs });
      },
    );
  });
}

export interface AgentEvent {
  merkmal: string;
  type: string;
  payload: any;
}

/** A device's events, newest first. */
export async function deviceEvents(ctx: TestContext, deviceId: string): Promise<AgentEvent[]> {
  const res = await ctx.request('GET', `/api/v1/devices/${deviceId}/events?limit=500`);
  expect(res.status).toBe(200);
  return res.body.items;
}

/** An API call that must succeed; its body. */
export async function ok(ctx: TestContext, method: string, path: string, body?: unknown): Promise<any> {
  const res = await ctx.request(method, path, { body });
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
  return res.body;
}
