/**
 * The device agent's python3 steps (jobs/iso/installer/agent/fleet_agent_helpers.py) on
 * their own: each subcommand run as fleet-agent runs it, on prepared files, with its output,
 * the files it writes (private) and its exit code, and what it does with bad input. The whole
 * agent against the service is test/agent/device_agent.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { missingTools } from '../support/tools.ts';

const HELPERS = fileURLToPath(new URL('../../jobs/iso/installer/agent/fleet_agent_helpers.py', import.meta.url));
const DEVICE_ID = '6f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41';
const SECRET = 'aB3_dE5-gH7iJ9kL1mN3oP5qR7sT9uV1';

const dir = mkdtempSync(join(tmpdir(), 'fleet-agent-helpers-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

let counter = 0;
/** A file of the scratch folder with this content (a value is written as JSON). */
async function file(content: unknown): Promise<string> {
  const path = join(dir, `f${++counter}`);
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

/** A path in the scratch folder where nothing is yet. */
function fresh(): string {
  return join(dir, `out${++counter}`);
}

function step(...args: string[]) {
  const out = spawnSync('python3', [HELPERS, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

async function json(path: string): Promise<any> {
  return JSON.parse(await readFile(path, 'utf8'));
}

async function mode(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

// A python3 start takes a second or more on a loaded machine, and a test starts up to three.
describe.skipIf(missingTools('python3'))('fleet_agent_helpers.py', { timeout: 60_000 }, () => {
  describe('conf', () => {
    it('prints the base URL without its trailing slash, the device id and whether a token is there', async () => {
      const conf = await file({ base_url: 'https://fleet.example/', device_id: DEVICE_ID, bootstrap_token: 'tok' });
      expect(step('conf', conf)).toEqual({
        code: 0,
        stdout: `https://fleet.example\n${DEVICE_ID}\ntoken\n`,
        stderr: '',
      });
      const used = await file({ base_url: 'http://10.0.2.2:3000', device_id: DEVICE_ID, bootstrap_token: '' });
      expect(step('conf', used).stdout).toBe(`http://10.0.2.2:3000\n${DEVICE_ID}\nnone\n`);
    });

    it.each([
      [{ base_url: 'ftp://fleet.example', device_id: DEVICE_ID }, 'agent.json: base_url is not an http(s) URL'],
      [{ base_url: 'https://a b', device_id: DEVICE_ID }, 'agent.json: base_url is not an http(s) URL'],
      [{ device_id: DEVICE_ID }, 'agent.json: base_url is not an http(s) URL'],
      [{ base_url: 'https://fleet.example', device_id: 'not-a-uuid' }, 'agent.json: device_id is not a UUID'],
      [{ base_url: 'https://fleet.example', device_id: 42 }, 'agent.json: device_id is not a UUID'],
    ])('refuses %j: exit 1, %s', async (content, message) => {
      expect(step('conf', await file(content))).toEqual({ code: 1, stdout: '', stderr: `${message}\n` });
    });

    it('a file that is not JSON, or a missing one: exit 1 with one line named after the step', async () => {
      const broken = step('conf', await file('{"base_url": '));
      expect(broken.code).toBe(1);
      expect(broken.stderr).toMatch(/^conf: Expecting value: line 1 column \d+ \(char \d+\)\n$/);
      const missing = step('conf', join(dir, 'none.json'));
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/^conf: \[Errno 2\] No such file or directory: .*none\.json'\n$/);
      const list = step('conf', await file([]));
      expect(list).toMatchObject({ code: 1, stderr: "conf: 'list' object has no attribute 'get'\n" });
    });
  });

  it('bootstrap-body: the device id, the token and this machine’s hardware, in a private file', async () => {
    const conf = await file({ base_url: 'https://f.example', device_id: DEVICE_ID, bootstrap_token: 'tok-1' });
    const out = fresh();
    expect(step('bootstrap-body', conf, out)).toEqual({ code: 0, stdout: '', stderr: '' });
    const body = await json(out);
    expect(body).toMatchObject({ device_id: DEVICE_ID, bootstrap_token: 'tok-1' });
    expect(Object.keys(body.hardware)).toEqual(expect.arrayContaining(['dmi', 'cpu', 'disks', 'kernel', 'hostname']));
    expect(body.hardware.cpu.cores).toBeGreaterThan(0);
    expect(await mode(out)).toBe(0o600);

    const noToken = step('bootstrap-body', await file({ device_id: DEVICE_ID }), fresh());
    expect(noToken).toEqual({ code: 1, stdout: '', stderr: "bootstrap-body: 'bootstrap_token'\n" });
  });

  it('hardware-json: this machine’s hardware (fleet-agent puts it into the check-in), private', async () => {
    const out = fresh();
    expect(step('hardware-json', out)).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(await json(out)).toMatchObject({ cpu: { cores: expect.any(Number) }, kernel: expect.any(String) });
    expect(await mode(out)).toBe(0o600);
  });

  describe('secret', () => {
    it('keeps the agent secret of this device’s answer, private, with a newline', async () => {
      const out = fresh();
      const answer = await file({ device_id: DEVICE_ID, agent_secret: SECRET });
      expect(step('secret', answer, out, DEVICE_ID)).toEqual({ code: 0, stdout: '', stderr: '' });
      expect(await readFile(out, 'utf8')).toBe(`${SECRET}\n`);
      expect(await mode(out)).toBe(0o600);
    });

    it.each([
      ['another device', { device_id: '00000000-0000-4000-8000-000000000000', agent_secret: SECRET }],
      ['no secret', { device_id: DEVICE_ID }],
      ['a short one', { device_id: DEVICE_ID, agent_secret: 'short' }],
      ['one with a space', { device_id: DEVICE_ID, agent_secret: `${SECRET} x` }],
      ['a number', { device_id: DEVICE_ID, agent_secret: 1234567890123456 }],
    ])('refuses %s: exit 1 and writes nothing', async (_, content) => {
      const out = fresh();
      const run = step('secret', await file(content), out, DEVICE_ID);
      expect(run).toEqual({ code: 1, stdout: '', stderr: 'the bootstrap answer has no usable agent secret\n' });
      await expect(stat(out)).rejects.toThrow('ENOENT');
    });
  });

  it('drop-token: agent.json without its bootstrap token, the rest kept, private', async () => {
    const conf = await file({ base_url: 'https://f.example', device_id: DEVICE_ID, bootstrap_token: 'tok' });
    expect(step('drop-token', conf)).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(await readFile(conf, 'utf8')).toBe(`{"base_url": "https://f.example", "device_id": "${DEVICE_ID}"}\n`);
    expect(await mode(conf)).toBe(0o600);
    expect(step('drop-token', conf).code).toBe(0); // already dropped: the same file again
    expect(await json(conf)).toEqual({ base_url: 'https://f.example', device_id: DEVICE_ID });
  });

  it.each([
    [
      'the code and the message',
      { error: 'device_deprovisioned', message: 'the device is deprovisioned' },
      'device_deprovisioned: the device is deprovisioned',
    ],
    [
      'control characters as spaces',
      { error: 'x', message: 'two\nlines\twith\x07controls' },
      'x: two lines with controls',
    ],
    ['"error" for a missing code', { message: 'no code' }, 'error: no code'],
    ['at most 300 characters', { error: 'e', message: 'm'.repeat(400) }, `e: ${'m'.repeat(297)}`],
    ['"no error message" for HTML', '<html>502 Bad Gateway</html>', 'no error message'],
    ['"no error message" for a list', ['a list'], 'no error message'],
  ])('error: %s', async (_, content, line) => {
    expect(step('error', await file(content))).toEqual({ code: 0, stdout: `${line}\n`, stderr: '' });
  });

  it('error: no answer at all prints "no error message"', () => {
    expect(step('error', join(dir, 'no-answer'))).toEqual({ code: 0, stdout: 'no error message\n', stderr: '' });
  });

  describe('answer', () => {
    const desired = {
      repository_url: 'https://git.example/roles.git',
      poll_interval_seconds: 60,
      blueprints: [{ merkmal: 'base', ansible_role: 'base' }],
      auftraege: [{ merkmal: 'qgis', ansible_role: 'qgis', state: 'present', optionen: { version: '3.34' } }],
    };

    it('writes the playbook’s variables and prints the repository and the poll interval', async () => {
      const vars = fresh();
      const run = step('answer', await file(desired), vars, '/w/results.json', '/w');
      expect(run).toEqual({ code: 0, stdout: 'https://git.example/roles.git\n60\n-\n6\n', stderr: '' });
      expect(await json(vars)).toEqual({
        fleet_blueprints: desired.blueprints,
        fleet_auftraege: desired.auftraege,
        fleet_results: '/w/results.json',
        fleet_work: '/w',
      });
      expect(await mode(vars)).toBe(0o600);
    });

    it('polls every 5 seconds at the most often', async () => {
      const run = step('answer', await file({ ...desired, poll_interval_seconds: 1 }), fresh(), 'r', 'w');
      expect(run.stdout).toBe('https://git.example/roles.git\n5\n-\n6\n');
    });

    it('prints whether the service wants the inventory and its refresh interval (6 hours when unusable)', async () => {
      const wanted = { ...desired, inventory: 'wanted', inventory_refresh_hours: 12 };
      expect(step('answer', await file(wanted), fresh(), 'r', 'w').stdout).toBe(
        'https://git.example/roles.git\n60\nwanted\n12\n',
      );
      for (const hours of [0, '12', true, 1.5, null]) {
        const odd = { ...desired, inventory: 'other', inventory_refresh_hours: hours };
        expect(step('answer', await file(odd), fresh(), 'r', 'w').stdout, String(hours)).toBe(
          'https://git.example/roles.git\n60\n-\n6\n',
        );
      }
    });

    it.each([
      [
        'a role with a slash',
        { auftraege: [{ merkmal: 'x', ansible_role: '../x', state: 'present' }] },
        "the check-in names an unusable role '../x'",
      ],
      ['a blueprint without a role', { blueprints: [{ merkmal: 'base' }] }, 'the check-in names an unusable role None'],
      [
        'a repository URL like an option',
        { repository_url: '--upload-pack=x' },
        'the check-in answer is not understood',
      ],
      ['a repository URL with a space', { repository_url: 'https://a b' }, 'the check-in answer is not understood'],
      ['a poll interval that is no integer', { poll_interval_seconds: '60' }, 'the check-in answer is not understood'],
    ])('refuses %s: exit 1, writes nothing', async (_, change, message) => {
      const vars = fresh();
      const run = step('answer', await file({ ...desired, ...change }), vars, 'r', 'w');
      expect(run).toEqual({ code: 1, stdout: '', stderr: `${message}\n` });
      await expect(stat(vars)).rejects.toThrow('ENOENT');
    });

    it('an answer without its fields: exit 1 naming the step and the field', async () => {
      const run = step('answer', await file({ blueprints: [], auftraege: [] }), fresh(), 'r', 'w');
      expect(run).toEqual({ code: 1, stdout: '', stderr: "answer: 'repository_url'\n" });
    });
  });

  describe('outcomes', () => {
    const desired = {
      blueprints: [{ merkmal: 'base', ansible_role: 'base' }],
      auftraege: [
        { merkmal: 'qgis', ansible_role: 'qgis', state: 'present', optionen: { version: '3.34' } },
        { merkmal: 'gastsitzung', ansible_role: 'guest_session', state: 'absent', optionen: null },
      ],
    };
    const log = [
      'localhost | SUCCESS => fleet-item-begin 0',
      'localhost | SUCCESS => fleet-item-end 0',
      'localhost | SUCCESS => fleet-item-begin 1',
      'localhost | CHANGED => {"changed": true}',
      'localhost | SUCCESS => fleet-item-end 1',
      'localhost | SUCCESS => fleet-item-begin 2',
      'localhost | SUCCESS => fleet-item-end 2',
    ].join('\n');

    it('all applied: the orders’ entries with what changed, their outcomes, exit 0', async () => {
      const results = await file([0, 1, 2].map((index) => ({ index, ok: true })));
      const out = fresh();
      const run = step('outcomes', results, await file(log), await file(desired), join(dir, 'none'), out);
      expect(run).toEqual({ code: 0, stdout: '3 roles applied, 0 failed; 2 to report\n', stderr: '' });
      expect(await json(out)).toEqual({
        entries: [
          { merkmal: 'qgis', event: 'applied', detail: { role: 'qgis', changed: true, message: null } },
          {
            merkmal: 'gastsitzung',
            event: 'removed',
            detail: { role: 'guest_session', changed: false, message: null },
          },
        ],
        outcomes: { qgis: 'applied|qgis|{"version": "3.34"}', gastsitzung: 'removed|guest_session|{}' },
      });
      expect(await mode(out)).toBe(0o600);
    });

    it('an outcome already reported is not reported again; nothing new: no file', async () => {
      const results = await file([0, 1, 2].map((index) => ({ index, ok: true })));
      const reported = await file({
        qgis: 'applied|qgis|{"version": "3.34"}',
        gastsitzung: 'removed|guest_session|{}',
      });
      const out = fresh();
      const run = step('outcomes', results, await file(log), await file(desired), reported, out);
      expect(run).toEqual({ code: 0, stdout: '3 roles applied, 0 failed; 0 to report\n', stderr: '' });
      await expect(stat(out)).rejects.toThrow('ENOENT');
    });

    it('"new" (the default) reports only outcomes not yet accepted; "every" reports them all', async () => {
      const results = await file([0, 1, 2].map((index) => ({ index, ok: true })));
      const reported = await file({ qgis: 'applied|qgis|{"version": "3.34"}' });
      const onlyNew = fresh();
      const run = step('outcomes', results, await file(log), await file(desired), reported, onlyNew, 'new');
      expect(run).toEqual({ code: 0, stdout: '3 roles applied, 0 failed; 1 to report\n', stderr: '' });
      expect((await json(onlyNew)).entries.map((e: { merkmal: string }) => e.merkmal)).toEqual(['gastsitzung']);

      const every = fresh();
      const all = step('outcomes', results, await file(log), await file(desired), reported, every, 'every');
      expect(all).toEqual({ code: 0, stdout: '3 roles applied, 0 failed; 2 to report\n', stderr: '' });
      expect(await json(every)).toEqual({
        entries: [
          { merkmal: 'qgis', event: 'applied', detail: { role: 'qgis', changed: true, message: null } },
          {
            merkmal: 'gastsitzung',
            event: 'removed',
            detail: { role: 'guest_session', changed: false, message: null },
          },
        ],
        outcomes: { qgis: 'applied|qgis|{"version": "3.34"}', gastsitzung: 'removed|guest_session|{}' },
      });
    });

    it('which orders to report, neither "every" nor "new": exit 1 naming the step', async () => {
      const run = step('outcomes', 'r', 'l', await file(desired), 'p', fresh(), 'some');
      expect(run).toEqual({
        code: 1,
        stdout: '',
        stderr: "outcomes: which orders to report: every or new, not 'some'\n",
      });
    });

    it('a failed role: its message in the summary and the entry, exit 5; a failure is reported again', async () => {
      const results = await file([
        { index: 0, ok: true },
        { index: 1, ok: false, message: 'apt failed\nbadly' },
        { index: 2, ok: true },
      ]);
      const reported = await file({ qgis: 'apply_failed|qgis|{"version": "3.34"}' });
      const out = fresh();
      const run = step('outcomes', results, await file(log), await file(desired), reported, out);
      expect(run).toEqual({
        code: 5,
        stdout: '2 roles applied, 1 failed: qgis (apt failed badly); 2 to report\n',
        stderr: '',
      });
      expect((await json(out)).entries[0]).toEqual({
        merkmal: 'qgis',
        event: 'apply_failed',
        detail: { role: 'qgis', changed: true, message: 'apt failed badly' },
      });
    });

    it('the playbook did not run: every role failed with the log’s last lines, exit 5', async () => {
      const out = fresh();
      const run = step(
        'outcomes',
        join(dir, 'no-results'),
        await file('ERROR! no\nplaybook'),
        await file(desired),
        join(dir, 'none'),
        out,
      );
      expect(run.code).toBe(5);
      expect(run.stdout).toContain('0 roles applied, 3 failed: base (the playbook stopped: ERROR! no playbook);');
      expect((await json(out)).entries.map((e: { event: string }) => e.event)).toEqual([
        'apply_failed',
        'remove_failed',
      ]);
    });

    it('no log at all: "the playbook did not run"', async () => {
      const run = step(
        'outcomes',
        join(dir, 'none'),
        join(dir, 'none'),
        await file(desired),
        join(dir, 'none'),
        fresh(),
      );
      expect(run.stdout).toContain('base (the playbook stopped: the playbook did not run)');
    });

    it('a desired state it cannot read: exit 1 naming the step', async () => {
      const run = step(
        'outcomes',
        join(dir, 'none'),
        join(dir, 'none'),
        await file({ blueprints: [] }),
        join(dir, 'none'),
        fresh(),
      );
      expect(run).toEqual({ code: 1, stdout: '', stderr: "outcomes: 'auftraege'\n" });
    });
  });

  describe('record-applied and same-as-applied', () => {
    const COMMIT = 'c0ffee0c0ffee0c0ffee0c0ffee0c0ffee0c0ff';
    const desired = {
      repository_url: 'https://git.example/roles.git',
      poll_interval_seconds: 60,
      blueprints: [
        { merkmal: 'base', ansible_role: 'base' },
        { merkmal: 'desktop', ansible_role: 'desktop' },
      ],
      auftraege: [
        { merkmal: 'qgis', ansible_role: 'qgis', state: 'present', optionen: { version: '3.34', plugins: ['a'] } },
        { merkmal: 'gastsitzung', ansible_role: 'guest_session', state: 'absent', optionen: null },
      ],
    };
    const [qgis, gast] = desired.auftraege;

    /** A record of `desired` applied at COMMIT, private. */
    async function recorded(): Promise<string> {
      const record = fresh();
      expect(step('record-applied', await file(desired), COMMIT, record)).toEqual({ code: 0, stdout: '', stderr: '' });
      expect(await mode(record)).toBe(0o600);
      return record;
    }

    async function compare(state: unknown, commit: string, record: string) {
      return step('same-as-applied', await file(state), commit, record);
    }

    it('the record holds the blueprints, the orders and the commit, not the rest of the answer', async () => {
      expect(await json(await recorded())).toEqual({
        blueprints: desired.blueprints,
        auftraege: desired.auftraege,
        commit: COMMIT,
      });
    });

    it('the same content in another order of keys and items, or another poll interval or URL: same', async () => {
      const record = await recorded();
      expect(await compare(desired, COMMIT, record)).toEqual({ code: 0, stdout: 'same\n', stderr: '' });
      const reordered = {
        auftraege: [
          { optionen: null, state: 'absent', ansible_role: 'guest_session', merkmal: 'gastsitzung' },
          { optionen: { plugins: ['a'], version: '3.34' }, state: 'present', merkmal: 'qgis', ansible_role: 'qgis' },
        ],
        blueprints: [...desired.blueprints]
          .reverse()
          .map((b) => ({ ansible_role: b.ansible_role, merkmal: b.merkmal })),
        poll_interval_seconds: 30,
        repository_url: 'https://mirror.example/roles.git',
      };
      expect((await compare(reordered, COMMIT, record)).stdout).toBe('same\n');
    });

    it.each([
      ['new optionen', { auftraege: [{ ...qgis, optionen: { version: '3.36', plugins: ['a'] } }, gast] }],
      [
        'a list in optionen grown',
        { auftraege: [{ ...qgis, optionen: { version: '3.34', plugins: ['a', 'b'] } }, gast] },
      ],
      ['optionen {} instead of null', { auftraege: [qgis, { ...gast, optionen: {} }] }],
      ['another state', { auftraege: [qgis, { ...gast, state: 'present' }] }],
      ['another role', { auftraege: [{ ...qgis, ansible_role: 'qgis_ltr' }, gast] }],
      [
        'an order more',
        { auftraege: [...desired.auftraege, { ...qgis, merkmal: 'firefox', ansible_role: 'firefox' }] },
      ],
      ['an order less', { auftraege: [qgis] }],
      ['a blueprint less', { blueprints: desired.blueprints.slice(1) }],
    ])('%s: changed', async (_, change) => {
      const run = await compare({ ...desired, ...change }, COMMIT, await recorded());
      expect(run).toEqual({ code: 0, stdout: 'changed\n', stderr: '' });
    });

    it('another commit of the roles, or none known: changed', async () => {
      const record = await recorded();
      expect((await compare(desired, 'f00df00df00df00df00df00df00df00df00df00d', record)).stdout).toBe('changed\n');
      expect((await compare(desired, '', record)).stdout).toBe('changed\n');
    });

    it('no record, or one that cannot be read: changed', async () => {
      expect((await compare(desired, COMMIT, join(dir, 'none'))).stdout).toBe('changed\n');
      expect((await compare(desired, COMMIT, await file('{'))).stdout).toBe('changed\n');
      expect((await compare(desired, COMMIT, await file(['a list']))).stdout).toBe('changed\n');
    });

    it('a desired state without its lists: exit 1 naming the step, no record written', async () => {
      const record = fresh();
      expect(step('record-applied', await file({ blueprints: [] }), COMMIT, record)).toEqual({
        code: 1,
        stdout: '',
        stderr: "record-applied: 'auftraege'\n",
      });
      await expect(stat(record)).rejects.toThrow('ENOENT');
      expect(await compare({ blueprints: {}, auftraege: [] }, COMMIT, record)).toEqual({
        code: 1,
        stdout: '',
        stderr: 'same-as-applied: blueprints and auftraege must be lists\n',
      });
    });
  });

  it('report-body: the spooled report’s entries without its outcomes', async () => {
    const spooled = await file({
      entries: [{ merkmal: 'qgis', event: 'applied' }],
      outcomes: { qgis: 'applied|qgis|{}' },
    });
    const out = fresh();
    expect(step('report-body', spooled, out)).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(await json(out)).toEqual({ entries: [{ merkmal: 'qgis', event: 'applied' }] });
    expect(await mode(out)).toBe(0o600);
    expect(step('report-body', await file('not json'), fresh())).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^report-body: /),
    });
  });

  it('accepted: the report’s outcomes merged into reported.json, sorted; an unreadable one starts afresh', async () => {
    const reported = await file({ qgis: 'applied|qgis|{}', base: 'x' });
    const spooled = await file({ entries: [], outcomes: { qgis: 'removed|qgis|{}', firefox: 'applied|firefox|{}' } });
    expect(step('accepted', spooled, reported)).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(await readFile(reported, 'utf8')).toBe(
      '{"base": "x", "firefox": "applied|firefox|{}", "qgis": "removed|qgis|{}"}',
    );
    expect(await mode(reported)).toBe(0o600);
    const broken = await file('{');
    expect(step('accepted', spooled, broken).code).toBe(0);
    expect(await json(broken)).toEqual({ firefox: 'applied|firefox|{}', qgis: 'removed|qgis|{}' });
  });

  it('poll: the kept state’s poll interval; exit 1 when it has none', async () => {
    expect(step('poll', await file({ poll_interval_seconds: 90 }))).toEqual({ code: 0, stdout: '90\n', stderr: '' });
    expect(step('poll', await file({}))).toEqual({ code: 1, stdout: '', stderr: "poll: 'poll_interval_seconds'\n" });
  });

  describe('the inventory’s pieces (called as functions)', () => {
    /** Runs `code` with the helpers imported as `h`; its stdout. */
    function call(code: string): string {
      const out = spawnSync(
        'python3',
        [
          '-c',
          `import sys; sys.path.insert(0, sys.argv[1]); import fleet_agent_helpers as h\n${code}`,
          dirname(HELPERS),
        ],
        {
          encoding: 'utf8',
          timeout: 30_000,
        },
      );
      expect(out.status, out.stderr).toBe(0);
      return out.stdout;
    }

    it('reboot_required: the flag file, or a kernel in /boot newer than the running one (dpkg’s order)', async () => {
      const boot = join(dir, 'boot');
      await mkdir(boot);
      await writeFile(join(boot, 'vmlinuz-6.1.0-9-amd64'), '');
      await writeFile(join(boot, 'vmlinuz-6.1.0-13-amd64'), '');
      const flag = join(dir, 'reboot-required');
      const check = (running: string) =>
        `print(h.reboot_required(h.dpkg_compare, ${JSON.stringify(running)}, ${JSON.stringify(boot)}, ${JSON.stringify(flag)}))`;
      expect(call([check('6.1.0-13-amd64'), check('6.1.0-10-amd64'), check('6.1.0-9-amd64')].join('\n'))).toBe(
        'False\nTrue\nTrue\n',
      );
      await writeFile(flag, '');
      expect(call(check('6.1.0-13-amd64'))).toBe('True\n');
    });

    it('os_release: ID, VERSION_ID and VERSION_CODENAME with shell quoting; empty when absent', async () => {
      const path = await file(
        'NAME="Debian GNU/Linux"\nID=debian\nVERSION_ID="12"\nVERSION_CODENAME=\'bookworm\'\n# ID=not\n',
      );
      const sid = await file('PRETTY_NAME="Debian GNU/Linux trixie/sid"\nID="deb\\"ian"\n');
      expect(
        call(
          `import json\nprint(json.dumps(h.os_release(${JSON.stringify(path)})))\nprint(json.dumps(h.os_release(${JSON.stringify(sid)})))`,
        ),
      ).toBe(
        '{"id": "debian", "version_id": "12", "codename": "bookworm"}\n{"id": "deb\\"ian", "version_id": "", "codename": ""}\n',
      );
    });
  });

  it('an unknown step, none, or too few arguments: exit 1 with one line', () => {
    expect(step('frobnicate')).toEqual({ code: 1, stdout: '', stderr: 'unknown step frobnicate\n' });
    expect(step()).toMatchObject({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^usage: fleet_agent_helpers\.py STEP/),
    });
    expect(step('secret', 'only-one')).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^secret: .*missing 2 required/),
    });
  });
});
