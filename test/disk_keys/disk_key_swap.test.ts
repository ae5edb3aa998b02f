/**
 * The device side of disk keys with real cryptsetup on a LUKS2 container in a file (key
 * slots need no device mapper), under dash, against the service on a loopback port: the
 * late command's key swap (`install.sh late` after the handshake), a refused escrow, and the
 * agent's rotation after a reveal. Fast PBKDF parameters keep each run short.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../api/log.ts';
import { verifyDiskKeys } from '../../api/disk_keys/service.ts';
import { TEMPLATES } from '../support/activation.ts';
import { request, type TestContext, testApp, useTestApp } from '../support/app.ts';
import { activationCodeOf, createOrganization } from '../support/builders.ts';
import { AgentService, installAgent } from '../support/device_agent.ts';
import { missingTools } from '../support/tools.ts';

const INSTALLER = fileURLToPath(new URL('../../jobs/iso/installer/', import.meta.url));
const FAST_PBKDF = '--pbkdf pbkdf2 --pbkdf-force-iterations 1000';
const PATH = `/usr/sbin:/sbin:${process.env.PATH}`;

const base = useTestApp();
const serviceLog: string[] = [];
/** The test app with a logger that keeps every line, served on a loopback port. */
const ctx = {} as TestContext;
let service: AgentService;
let dir: string;

beforeAll(async () => {
  Object.assign(ctx, base);
  ctx.app = testApp(
    base.sql,
    base.config,
    createLogger('debug', (line) => serviceLog.push(line)),
  );
  ctx.request = (method, path, options) => request(ctx.app, method, path, options);
  service = new AgentService(ctx);
  await service.start();
  dir = await mkdtemp(join(tmpdir(), 'fleet-disk-keys-'));
});

afterAll(async () => {
  await service?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function run(
  args: string[],
  env: Record<string, string>,
  input?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile('dash', args, { env: { PATH, ...env }, timeout: 25_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

/** `cryptsetup open --test-passphrase` with the key on stdin: whether it opens the container. */
function opens(file: string, key: string): boolean {
  try {
    execFileSync('cryptsetup', ['open', '--test-passphrase', '--key-file=-', file], { input: key, env: { PATH } });
    return true;
  } catch {
    return false;
  }
}

function keyslots(file: string): number[] {
  const dump = execFileSync('cryptsetup', ['luksDump', file], { env: { PATH }, encoding: 'utf8' });
  const section = dump.slice(dump.indexOf('Keyslots:'), dump.indexOf('Tokens:'));
  return [...section.matchAll(/^ {2}(\d+): luks2/gm)].map((m) => Number(m[1]));
}

function luksUuid(file: string): string {
  return execFileSync('cryptsetup', ['luksUUID', file], { env: { PATH }, encoding: 'utf8' }).trim();
}

/** A LUKS2 container in a file, as partman-crypto or subiquity leaves it: one slot, the install passphrase. */
async function container(name: string, passphrase: string): Promise<string> {
  const file = join(dir, `${name}.img`);
  await writeFile(file, Buffer.alloc(0));
  execFileSync('truncate', ['-s', '20M', file]);
  execFileSync(
    'cryptsetup',
    ['luksFormat', '--type', 'luks2', '--batch-mode', ...FAST_PBKDF.split(' '), '--key-file=-', file],
    { input: passphrase, env: { PATH } },
  );
  return file;
}

/** The files under `folder` that contain any of `secrets`. */
function filesHolding(folder: string, secrets: string[]): string {
  try {
    return execFileSync('grep', ['-rlF', ...secrets.flatMap((x) => ['-e', x]), folder], { encoding: 'utf8' });
  } catch {
    return '';
  }
}

/** Samples every process's command line while `work` runs. */
async function watchingCommandLines<T>(work: () => Promise<T>): Promise<{ result: T; lines: string[] }> {
  const lines: string[] = [];
  let running = true;
  const sampler = (async () => {
    // Asynchronously: the service answering the script runs in this process.
    while (running) {
      lines.push(await new Promise<string>((done) => execFile('ps', ['-eo', 'args'], (_, out) => done(out))));
    }
  })();
  const result = await work();
  running = false;
  await sampler;
  return { result, lines };
}

/** The handshake of an image bound to the encrypted template: `install.sh early` against the service. */
async function handshake(name: string) {
  const org = (await createOrganization(ctx)).id;
  const code = await activationCodeOf(ctx, org);
  const out = join(dir, name, 'run');
  await mkdir(out, { recursive: true });
  const config = join(dir, name, 'provisioning.json');
  await writeFile(
    config,
    JSON.stringify({ credential: code, api_url: `${service.url}/api/v1`, template_id: TEMPLATES.debianEncrypted }),
  );
  const env = { FLEET_CONFIG: config, FLEET_OUT: out, FLEET_SERIAL: `SN-${name}-${crypto.randomUUID().slice(0, 8)}` };
  // The handshake itself (install.sh early would wait for a power-off after a failure).
  const early = await run([join(INSTALLER, 'handshake.sh')], env);
  expect(early.code, early.stderr).toBe(0);
  const passphrase = await readFile(join(out, 'install-passphrase'), 'utf8');
  expect(passphrase).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const blueprint = await readFile(join(out, 'blueprint.json'), 'utf8');
  expect(blueprint).not.toContain(passphrase);
  expect(blueprint).toContain('"unlock":"tpm2"');
  // As PUBLIC_BASE_URL would say: the service on its loopback port.
  const agent = { ...JSON.parse(await readFile(join(out, 'agent.json'), 'utf8')), base_url: service.url };
  await writeFile(join(out, 'agent.json'), JSON.stringify(agent), { mode: 0o600 });
  return { org, out, env, passphrase, agent };
}

function late(device: Awaited<ReturnType<typeof handshake>>, target: string, file: string, extra = {}) {
  return run([join(INSTALLER, 'install.sh'), 'late', target], {
    ...device.env,
    FLEET_LUKS_DEVICE: file,
    FLEET_LUKS_PBKDF: FAST_PBKDF,
    FLEET_TPM: join(dir, 'no-tpm'),
    FLEET_RETRY_DELAY: '1',
    ...extra,
  });
}

describe.skipIf(missingTools('cryptsetup', 'dash', 'curl'))('disk keys with real cryptsetup', () => {
  const transcript: string[] = [];

  it("the late command's key swap: the install passphrase opens the disk before, not after; the escrowed key does", async () => {
    const device = await handshake('swap');
    const file = await container('swap', device.passphrase);
    expect(opens(file, device.passphrase)).toBe(true);
    expect(keyslots(file)).toEqual([0]);
    const target = join(dir, 'swap', 'target');
    await mkdir(target, { recursive: true });

    const { result, lines } = await watchingCommandLines(() => late(device, target, file));
    transcript.push(result.stderr);
    expect(result.code, result.stderr).toBe(0);
    expect(opens(file, device.passphrase)).toBe(false);
    expect(keyslots(file)).toEqual([1]);
    expect(existsSync(join(device.out, 'install-passphrase'))).toBe(false);

    const listed = await ctx.request('GET', `/api/v1/devices/${device.agent.device_id}/disk-keys`);
    expect(listed.body.items).toMatchObject([{ luks_uuid: luksUuid(file), keyslot: 1, status: 'escrowed' }]);
    const revealed = await ctx.request('POST', `/api/v1/disk-keys/${listed.body.items[0].id}/reveal`, {
      body: { reason: 'test: the escrowed key opens the disk' },
    });
    const key: string = revealed.body.recovery_key;
    expect(key).toMatch(/^[cbdefghijklnrtuv]{8}(-[cbdefghijklnrtuv]{8}){7}$/);
    expect(opens(file, key)).toBe(true);

    // Nothing of either key on a command line, in the script's output, the service's log or
    // the installed system's files; the bootstrap token was not used up by the escrow.
    const seen = [...lines, result.stdout, result.stderr, ...serviceLog].join('\n');
    for (const secret of [key, key.replaceAll('-', ''), device.passphrase]) expect(seen).not.toContain(secret);
    expect(filesHolding(target, [key, device.passphrase])).toBe('');
    const bootstrap = await ctx.request('POST', '/api/v1/agent/bootstrap', {
      token: null,
      body: { device_id: device.agent.device_id, bootstrap_token: device.agent.bootstrap_token },
    });
    expect(bootstrap.status).toBe(201);
  });

  it('a refused escrow keeps the install passphrase, removes the unescrowed key and fails the late command', async () => {
    const device = await handshake('refused');
    const file = await container('refused', device.passphrase);
    const target = join(dir, 'refused', 'target');
    await mkdir(target, { recursive: true });
    // The device was archived meanwhile: the service refuses the escrow (403).
    expect((await ctx.request('POST', `/api/v1/devices/${device.agent.device_id}/archive`)).status).toBe(200);
    const result = await late(device, target, file);
    transcript.push(result.stderr);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/refused the escrow \(HTTP 403\)/);
    expect(opens(file, device.passphrase)).toBe(true);
    expect(keyslots(file)).toEqual([0]);
    expect(await ctx.sql`select 1 from disk_keys where device_id = ${device.agent.device_id}`).toHaveLength(0);
  });

  it('an unreachable service is retried, then the late command fails and the install passphrase stays', async () => {
    const device = await handshake('unreachable');
    const file = await container('unreachable', device.passphrase);
    const target = join(dir, 'unreachable', 'target');
    await mkdir(target, { recursive: true });
    await writeFile(
      join(device.out, 'agent.json'),
      JSON.stringify({ ...device.agent, base_url: 'http://127.0.0.1:9' }),
    );
    const result = await late(device, target, file, { FLEET_RETRIES: '2' });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/retrying in 1s \(1\/2\)/);
    expect(result.stderr).toMatch(/no escrow after 2 attempts/);
    expect(opens(file, device.passphrase)).toBe(true);
    expect(keyslots(file)).toEqual([0]);
  });

  it("the agent's rotation after a reveal: the old key no longer opens, the new escrowed one does, the old is rotated", async () => {
    const device = await handshake('rotate');
    const file = await container('rotate', device.passphrase);
    const target = join(dir, 'rotate', 'target');
    await mkdir(target, { recursive: true });
    expect((await late(device, target, file)).code).toBe(0);
    const root = join(dir, 'rotate', 'root');
    await installAgent(root, device.agent);
    const env = {
      HOME: root,
      FLEET_ROOT: root,
      FLEET_ROLES_PATH: join(dir, 'no-roles'),
      FLEET_ANSIBLE_PLAYBOOK: 'true',
      FLEET_LUKS_DEVICES: file,
      FLEET_LUKS_PBKDF: FAST_PBKDF,
      FLEET_RETRY_DELAY: '1',
    };
    const agentPath = join(root, 'usr/local/sbin/fleet-agent');
    const first = await run([agentPath, 'once'], env);
    expect([0, 5], first.stdout + first.stderr).toContain(first.code);

    const [old] = (await ctx.request('GET', `/api/v1/devices/${device.agent.device_id}/disk-keys`)).body.items;
    const oldKey = (
      await ctx.request('POST', `/api/v1/disk-keys/${old.id}/reveal`, { body: { reason: 'Ticket 42: locked out' } })
    ).body.recovery_key;
    expect(opens(file, oldKey)).toBe(true);

    const { result, lines } = await watchingCommandLines(() => run([agentPath, 'once'], env));
    transcript.push(result.stdout);
    expect(result.stdout).toMatch(/disk key rotation: the revealed recovery key of .* was replaced/);
    const keys = (await ctx.request('GET', `/api/v1/devices/${device.agent.device_id}/disk-keys`)).body.items;
    expect(keys.map((k: { status: string }) => k.status)).toEqual(['rotated', 'escrowed']);
    const newKey = (
      await ctx.request('POST', `/api/v1/disk-keys/${keys[1].id}/reveal`, { body: { reason: 'test: new key opens' } })
    ).body.recovery_key;
    expect(opens(file, oldKey)).toBe(false);
    expect(opens(file, newKey)).toBe(true);
    expect(keyslots(file)).toEqual([keys[1].keyslot]);
    const seen = [...lines, result.stdout, result.stderr, ...serviceLog].join('\n');
    expect(seen).not.toContain(oldKey);
    expect(seen).not.toContain(newKey);
    // The kept desired state holds no key.
    expect(filesHolding(root, [oldKey, newKey])).toBe('');

    // The inventory's luks (fleet-disk-key luks) marks the key verified; with its slot removed, missing.
    const luks = await run([join(INSTALLER, 'agent/fleet-disk-key'), 'luks'], { FLEET_LUKS_DEVICES: file });
    const volumes = JSON.parse(luks.stdout);
    expect(volumes).toEqual([{ device_path: file, luks_uuid: luksUuid(file), keyslots: [keys[1].keyslot] }]);
    expect(luks.stdout).not.toContain(newKey);
    expect((await verifyDiskKeys(ctx.sql, device.agent.device_id, volumes)).map((k) => k.status)).toEqual(['verified']);
    // A spare key is added and the recovery key's slot killed: the next inventory says missing.
    const spare = join(dir, 'rotate', 'spare-key');
    await writeFile(spare, 'spare-passphrase', { mode: 0o600 });
    const fast = FAST_PBKDF.split(' ');
    execFileSync(
      'cryptsetup',
      ['luksAddKey', '--batch-mode', ...fast, '--key-file=-', `--new-keyfile=${spare}`, file],
      {
        input: newKey,
        env: { PATH },
      },
    );
    execFileSync('cryptsetup', ['luksKillSlot', '--batch-mode', `--key-file=${spare}`, file, String(keys[1].keyslot)], {
      env: { PATH },
    });
    const after = JSON.parse(
      (await run([join(INSTALLER, 'agent/fleet-disk-key'), 'luks'], { FLEET_LUKS_DEVICES: file })).stdout,
    );
    expect((await verifyDiskKeys(ctx.sql, device.agent.device_id, after)).map((k) => k.status)).toEqual(['missing']);
  });

  /**
   * The late command where the installer lacks tools (jobs/iso/installer/install.sh,
   * disk_key): without cryptsetup the swap runs chrooted into the installed system, and
   * without curl (d-i has none) the escrow's curl does. The installed system here is the
   * host's /usr bound read-only into a target whose /usr/local is its own (where
   * install.sh puts the agent), with /dev and /proc bound as d-i binds them; all in a user
   * and mount namespace (`unshare -r -m`), so no root is needed.
   */
  it.skipIf(missingTools('unshare')).each([
    ['without cryptsetup nor curl in the installer, the swap runs chrooted into the target', false],
    ['with cryptsetup but without curl in the installer (d-i), only the escrow runs chrooted', true],
  ])('%s', async (_name, installerHasCryptsetup) => {
    const name = installerHasCryptsetup ? 'chroot-curl' : 'chroot-swap';
    const device = await handshake(name);
    const data = join(dir, name, 'data');
    await mkdir(data, { recursive: true });
    const file = join(data, 'disk.img');
    await writeFile(file, Buffer.alloc(0));
    execFileSync('truncate', ['-s', '20M', file]);
    execFileSync(
      'cryptsetup',
      ['luksFormat', '--type', 'luks2', '--batch-mode', ...FAST_PBKDF.split(' '), '--key-file=-', file],
      {
        input: device.passphrase,
        env: { PATH },
      },
    );
    // The installed system: mount points for the host's /usr, its own /usr/local, /dev, /proc,
    // and the container's folder at the same path (as /dev/sda3 is the same in and out).
    const target = join(dir, name, 'target');
    for (const sub of [
      'usr/bin',
      'usr/sbin',
      'usr/lib',
      'usr/lib64',
      'usr/local',
      'dev',
      'proc',
      'tmp',
      data.slice(1),
    ]) {
      await mkdir(join(target, sub), { recursive: true });
    }
    for (const link of ['bin', 'sbin', 'lib', 'lib64']) await symlink(`usr/${link}`, join(target, link));
    // The installer's tools: what install.sh's late command runs outside, without curl.
    const installer = join(dir, name, 'installer-bin');
    await mkdir(installer);
    const tools = ['sh', 'mkdir', 'chmod', 'cp', 'chown', 'mv', 'ln', 'tr', 'sed', 'head', 'tail', 'rm'];
    tools.push('dirname', 'cat', 'chroot', 'od', 'sleep');
    if (installerHasCryptsetup) tools.push('cryptsetup');
    for (const tool of tools) {
      const found = ['/usr/bin', '/usr/sbin', '/bin', '/sbin'].map((d) => join(d, tool)).find((p) => existsSync(p));
      await symlink(found!, join(installer, tool));
    }
    const script = [
      'target=$1 data=$2 installer=$3 install=$4',
      'for d in bin sbin lib lib64; do [ ! -d /usr/$d ] || mount --bind -o ro /usr/$d "$target/usr/$d" || exit 90; done',
      'mount --rbind /dev "$target/dev" && mount --rbind /proc "$target/proc" && mount --bind "$data" "$target$data" || exit 91',
      'dash=$(command -v dash)',
      'PATH=$installer exec "$dash" "$install" late "$target"',
    ].join('\n');
    const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        'unshare',
        ['-r', '-m', 'dash', '-c', script, 'late', target, data, installer, join(INSTALLER, 'install.sh')],
        {
          env: {
            PATH,
            ...device.env,
            FLEET_LUKS_DEVICE: file,
            FLEET_LUKS_PBKDF: FAST_PBKDF,
            FLEET_TPM: join(dir, 'no-tpm'),
            FLEET_RETRY_DELAY: '1',
          },
          timeout: 25_000,
        },
        (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      );
    });
    transcript.push(result.stderr);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/recovery key of .*disk\.img escrowed \(HTTP 201\)/);
    // The tool that ran: the image's own in the installer, else the one installed into the target.
    expect(existsSync(join(target, 'usr/local/sbin/fleet-disk-key'))).toBe(true);
    expect(opens(file, device.passphrase)).toBe(false);
    const listed = await ctx.request('GET', `/api/v1/devices/${device.agent.device_id}/disk-keys`);
    expect(listed.body.items).toMatchObject([{ luks_uuid: luksUuid(file), keyslot: 1, status: 'escrowed' }]);
    const revealed = await ctx.request('POST', `/api/v1/disk-keys/${listed.body.items[0].id}/reveal`, {
      body: { reason: 'test: the chrooted swap escrowed the key' },
    });
    expect(opens(file, revealed.body.recovery_key)).toBe(true);
    expect(existsSync(join(device.out, 'install-passphrase'))).toBe(false);
  });

  afterAll(() => {
    // The transcript of the runs (keys are never printed), for the report.
    if (process.env.FLEET_DISK_KEY_TRANSCRIPT) console.log(transcript.join('\n----\n'));
  });
});
