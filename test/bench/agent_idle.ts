/**
 * The device agent's idle cost: the CPU of a `fleet-agent once` whose check-in is a 304,
 * for the agent of a git ref (the baseline, default `main`) and the working tree's, against
 * a stand-in of the service on a loopback port that answers the first check-in with a
 * desired state of nothing and every later one with 304. Each agent is installed into its
 * own temporary root (FLEET_ROOT) with an agent secret already kept (no bootstrap), cycles
 * once to settle (200: its inventory, hardware and configuration read and kept), then the
 * two take turns for `--runs` 304 cycles each (median printed, and the ratio). python3 and
 * dpkg-query are wrapped to count their starts per cycle.
 *
 *   npx tsx test/bench/agent_idle.ts [--baseline=main] [--runs=5]
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentOnce } from '../support/device_agent.ts';

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const baseline = arg('baseline', 'main');
const runs = Number(arg('runs', '5'));

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const AGENT = 'jobs/iso/installer/agent';
const DEVICE_ID = '6f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41';
const ETAG = '"idle1"';

const scratch = mkdtempSync(join(tmpdir(), 'fleet-agent-idle-'));
const counts = join(scratch, 'starts');
const bin = join(scratch, 'bin');
mkdirSync(bin);
// The distribution's python3 (with python3-apt) where there is one, as on a device.
const python = execFileSync('sh', ['-c', '[ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3'], {
  encoding: 'utf8',
}).trim();
const dpkgQuery = execFileSync('sh', ['-c', 'command -v dpkg-query || echo /usr/bin/dpkg-query'], {
  encoding: 'utf8',
}).trim();
for (const [name, real] of [
  ['python3', python],
  ['dpkg-query', dpkgQuery],
]) {
  writeFileSync(join(bin, name!), `#!/bin/sh\necho ${name} >>"${counts}"\nexec ${real} "$@"\n`);
  chmodSync(join(bin, name!), 0o755);
}

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/api/v1/agent/checkin') {
      res.writeHead(404).end();
      return;
    }
    if (req.headers['if-none-match'] === ETAG) {
      res.writeHead(304, { etag: ETAG }).end();
      return;
    }
    const desired = {
      device_id: DEVICE_ID,
      blueprints: [],
      repository_url: 'file:///nonexistent',
      poll_interval_seconds: 60,
      auftraege: [],
    };
    res.writeHead(200, { 'content-type': 'application/json', etag: ETAG }).end(JSON.stringify(desired));
  });
});
await new Promise<void>((ready) => server.listen(0, '127.0.0.1', () => ready()));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

/** An agent's root: its files from `ref` (null: the working tree), its configuration and secret. */
function install(name: string, ref: string | null): string {
  const root = join(scratch, name);
  for (const dir of ['usr/local/sbin', 'usr/local/share/fleet', 'etc/fleet', 'var/lib/fleet', 'roles']) {
    mkdirSync(join(root, dir), { recursive: true });
  }
  const file = (path: string) =>
    ref === null
      ? readFileSync(join(REPO, AGENT, path), 'utf8')
      : execFileSync('git', ['-C', REPO, 'show', `${ref}:${AGENT}/${path}`], { encoding: 'utf8' });
  writeFileSync(join(root, 'usr/local/sbin/fleet-agent'), file('fleet-agent'), { mode: 0o755 });
  for (const f of ['fleet_agent_helpers.py', 'site.yml'])
    writeFileSync(join(root, 'usr/local/share/fleet', f), file(f));
  writeFileSync(join(root, 'etc/fleet/agent.json'), JSON.stringify({ base_url: url, device_id: DEVICE_ID }));
  writeFileSync(join(root, 'var/lib/fleet/agent-secret'), 'aB3_dE5-gH7iJ9kL1mN3oP5qR7sT9uV1\n', { mode: 0o600 });
  return root;
}

async function cycle(root: string): Promise<{ cpuMs: number; starts: string }> {
  rmSync(counts, { force: true });
  const logs: string[] = [];
  const run = await agentOnce(
    root,
    {
      PATH: `${bin}:${process.env.PATH}`,
      FLEET_ROLES_PATH: join(root, 'roles'),
      FLEET_ANSIBLE_PLAYBOOK: 'true',
      FLEET_RETRIES: '1',
    },
    logs,
  );
  if (run.code !== 0) throw new Error(`fleet-agent once exited ${run.code}: ${logs.join('\n')}`);
  let started: string[] = [];
  try {
    started = readFileSync(counts, 'utf8').split('\n').filter(Boolean);
  } catch {
    started = [];
  }
  const tally = (n: string) => started.filter((s) => s === n).length;
  return { cpuMs: run.cpuMs, starts: `python3 ×${tally('python3')}, dpkg-query ×${tally('dpkg-query')}` };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  const agents = { [baseline]: install('baseline', baseline), 'working tree': install('current', null) };
  for (const root of Object.values(agents)) await cycle(root); // the 200: everything read and kept
  const cpu: Record<string, number[]> = {};
  const starts: Record<string, string> = {};
  for (let i = 0; i < runs; i++) {
    for (const [name, root] of Object.entries(agents)) {
      const r = await cycle(root);
      (cpu[name] ??= []).push(r.cpuMs);
      starts[name] = r.starts;
    }
  }
  console.log(`fleet-agent once, a 304 cycle (median of ${runs}, CPU of the agent and its children):`);
  for (const name of Object.keys(agents)) {
    console.log(
      `  ${name}: ${median(cpu[name]!).toFixed(0)} ms CPU (${cpu[name]!.map((c) => c.toFixed(0)).join(', ')}); ${starts[name]}`,
    );
  }
  console.log(
    `  ratio working tree / ${baseline}: ${(median(cpu['working tree']!) / median(cpu[baseline]!)).toFixed(2)}`,
  );
} finally {
  server.close();
  rmSync(scratch, { recursive: true, force: true });
}
