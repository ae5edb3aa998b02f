/**
 * The device actions' python3 steps of the agent (fleet_agent_helpers.py; CONTRACT §28) on
 * their own, run as fleet-agent runs them: `take-actions` (the check-in's actions queued,
 * taken out of the kept answer), `run-script` (real interpreters, real process groups and
 * timeouts), `action-result` and `reboot-params`. `apply-updates` with real apt and dpkg is
 * fleet_agent_updates.test.ts; the whole agent against the service
 * test/agent/device_agent_actions.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { missingTools } from '../support/tools.ts';

const HELPERS = fileURLToPath(new URL('../../jobs/iso/installer/agent/fleet_agent_helpers.py', import.meta.url));
const ID = (n: number) => `6f1c2b7e-8d4a-4c55-9b1e-${String(n).padStart(12, '0')}`;

const dir = mkdtempSync(join(tmpdir(), 'fleet-agent-actions-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

let counter = 0;

function step(...args: string[]) {
  const out = spawnSync('python3', [HELPERS, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

/** Runs `code` with the helpers imported as `h`; its stdout. */
function call(code: string): string {
  const out = spawnSync(
    'python3',
    ['-c', `import sys; sys.path.insert(0, sys.argv[1]); import fleet_agent_helpers as h\n${code}`, dirname(HELPERS)],
    { encoding: 'utf8', timeout: 60_000 },
  );
  expect(out.status, out.stderr).toBe(0);
  return out.stdout;
}

async function json(path: string): Promise<any> {
  return JSON.parse(await readFile(path, 'utf8'));
}

async function mode(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

/** A record folder as fleet-agent claims it: the action in action.json. */
async function record(action: Record<string, unknown>): Promise<string> {
  const rec = join(dir, `rec${++counter}`);
  await mkdir(rec, { mode: 0o700 });
  await writeFile(join(rec, 'action.json'), JSON.stringify({ id: ID(counter), ...action }), { mode: 0o600 });
  return rec;
}

function script(interpreter: string, text: string, timeout_seconds?: number) {
  return { type: 'script', parameters: { interpreter, script: text, timeout_seconds } };
}

/** Whether a process is gone (or only a zombie waiting for its parent's wait). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

describe.skipIf(missingTools('python3'))('the device actions’ python3 steps', { timeout: 60_000 }, () => {
  describe('take-actions', () => {
    const answer = (actions: unknown) => ({
      device_id: ID(0),
      blueprints: [],
      auftraege: [],
      repository_url: 'file:///roles',
      poll_interval_seconds: 60,
      actions,
    });

    async function prepared(actions: unknown) {
      const base = join(dir, `actions${++counter}`);
      await mkdir(base);
      const path = join(base, 'answer.json');
      await writeFile(path, JSON.stringify(answer(actions)));
      return { base, path, queue: join(base, 'actions', 'queue') };
    }

    it('queues each action without a record in the answer’s order, privately, and takes them out of the answer', async () => {
      const reboot = {
        id: ID(1),
        type: 'reboot',
        parameters: { delay_seconds: 60 },
        expires_at: '2099-01-01T00:00:00Z',
      };
      const run = { id: ID(2), type: 'script', parameters: { interpreter: 'sh', script: 'echo secret-text' } };
      const { base, path, queue } = await prepared([reboot, run]);
      expect(step('take-actions', path, join(base, 'actions'))).toEqual({ code: 0, stdout: '2\n', stderr: '' });
      expect(await readdir(queue)).toEqual([`00-${ID(1)}.reboot.json`, `01-${ID(2)}.script.json`]);
      expect(await json(join(queue, `00-${ID(1)}.reboot.json`))).toEqual(reboot);
      expect(await json(join(queue, `01-${ID(2)}.script.json`))).toEqual(run);
      expect(await mode(join(queue, `01-${ID(2)}.script.json`))).toBe(0o600);
      expect(await mode(queue)).toBe(0o700);
      // The answer is kept as the desired state: without the actions (and their scripts).
      const { actions: _, ...rest } = answer([]);
      expect(await json(path)).toEqual(rest);
      expect(await readFile(path, 'utf8')).not.toContain('secret-text');
    });

    it('an id with a record is not queued again; the queue of an earlier answer is replaced', async () => {
      const { base, path, queue } = await prepared([
        { id: ID(3), type: 'apply_now', parameters: {} },
        { id: ID(4), type: 'apply_updates', parameters: { security_only: true } },
      ]);
      await mkdir(queue, { recursive: true });
      await writeFile(join(queue, `00-${ID(9)}.reboot.json`), '{}');
      await mkdir(join(base, 'actions', ID(3)));
      expect(step('take-actions', path, join(base, 'actions')).stdout).toBe('1\n');
      expect(await readdir(queue)).toEqual([`01-${ID(4)}.apply_updates.json`]);
    });

    it('an answer without actions (or with none) empties the queue', async () => {
      const { base, path, queue } = await prepared([]);
      await mkdir(queue, { recursive: true });
      await writeFile(join(queue, `00-${ID(9)}.reboot.json`), '{}');
      expect(step('take-actions', path, join(base, 'actions')).stdout).toBe('0\n');
      expect(await readdir(queue)).toEqual([]);
      await writeFile(path, JSON.stringify({ blueprints: [] }));
      expect(step('take-actions', path, join(base, 'actions'))).toEqual({ code: 0, stdout: '0\n', stderr: '' });
    });

    it('an action it cannot name safely is skipped with a line on stderr; the others are queued', async () => {
      const { base, path, queue } = await prepared([
        { id: '../../etc', type: 'script', parameters: {} },
        { id: ID(5), type: 'script/../x', parameters: {} },
        { id: ID(6), type: 'reboot', parameters: 'now' },
        'not an object',
        { id: ID(7).toUpperCase(), type: 'reboot' },
        { id: `${ID(8)}\n`, type: 'reboot' },
        { id: ID(9), type: 'reboot\n' },
      ]);
      const run = step('take-actions', path, join(base, 'actions'));
      expect(run).toEqual({
        code: 0,
        stdout: '1\n',
        stderr: [
          'take-actions: an action without a usable id is skipped',
          `take-actions: action ${ID(5)} is not understood, skipped`,
          `take-actions: action ${ID(6)} is not understood, skipped`,
          'take-actions: an action without a usable id is skipped',
          'take-actions: an action without a usable id is skipped',
          `take-actions: action ${ID(9)} is not understood, skipped`,
          '',
        ].join('\n'),
      });
      // Ids name folders and URLs in lower case.
      expect(await readdir(queue)).toEqual([`04-${ID(7)}.reboot.json`]);
      expect(existsSync(join(base, 'etc'))).toBe(false);
    });

    it('actions that are not a list: exit 1 naming the step, the answer as it was', async () => {
      const { base, path } = await prepared({ id: ID(1) });
      const before = await readFile(path, 'utf8');
      expect(step('take-actions', path, join(base, 'actions'))).toEqual({
        code: 1,
        stdout: '',
        stderr: 'take-actions: actions is not a list\n',
      });
      expect(await readFile(path, 'utf8')).toBe(before);
    });
  });

  describe('run-script', () => {
    it('sh: stdout and stderr together in order, exit 0, a private result; the text in no file afterwards', async () => {
      const rec = await record(script('sh', 'echo one\necho two >&2\necho three\n'));
      const run = step('run-script', rec);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^exit 0 in \d+ ms\n$/);
      const result = await json(join(rec, 'result.json'));
      expect(result).toEqual({ exit_code: 0, output: 'one\ntwo\nthree\n', duration_ms: expect.any(Number) });
      expect(result.duration_ms).toBeLessThan(30_000);
      expect(await mode(join(rec, 'result.json'))).toBe(0o600);
      expect(await mode(join(rec, 'output'))).toBe(0o600);
      // The text is gone from the record: out of action.json before the run, its file after.
      expect(existsSync(join(rec, 'script'))).toBe(false);
      expect((await json(join(rec, 'action.json'))).parameters).toEqual({ interpreter: 'sh', script: null });
    });

    it('a failing script: its exit code (bash, python3), its output', async () => {
      const bash = await record(script('bash', 'echo "$BASH_VERSION" | grep -q . && echo bash; exit 3'));
      expect(step('run-script', bash).stdout).toMatch(/^exit 3 in \d+ ms\n$/);
      expect(await json(join(bash, 'result.json'))).toMatchObject({ exit_code: 3, output: 'bash\n' });

      const py = await record(script('python3', 'import sys\nprint("to stderr", file=sys.stderr)\nsys.exit(7)\n'));
      expect(step('run-script', py).code).toBe(0);
      expect(await json(join(py, 'result.json'))).toMatchObject({ exit_code: 7, output: 'to stderr\n' });

      const killed = await record(script('sh', 'kill -9 $$'));
      step('run-script', killed);
      expect((await json(join(killed, 'result.json'))).exit_code).toBe(137); // 128 + SIGKILL, as a shell says it
    });

    it('runs from a private file in a session of its own, in /, with no input; the text on no command line', async () => {
      const marker = 'MARKER-only-in-the-text-4711';
      const rec = await record(
        script(
          'sh',
          [
            `# ${marker}`,
            'pwd',
            'cat; echo "input done"',
            'ps -o sid= -p $$ | tr -d " "; echo $$',
            'ls -l "$0" | cut -c1-10',
            'tr "\\0" " " </proc/$$/cmdline; echo',
            'tr "\\0" " " </proc/$PPID/cmdline; echo',
          ].join('\n'),
        ),
      );
      step('run-script', rec);
      const lines = (await json(join(rec, 'result.json'))).output.split('\n');
      expect(lines[0]).toBe('/');
      expect(lines[1]).toBe('input done');
      expect(lines[2]).toBe(lines[3]); // its session is its own: the script leads it
      expect(lines[4]).toBe('-rw-------');
      expect(lines[5]).toBe(`sh ${join(rec, 'script')} `);
      expect(lines[6]).toContain(`run-script ${rec}`);
      expect(lines.join('\n')).not.toContain(marker);
    });

    it('at its timeout the process group ends (SIGTERM): exit 124, details.timed_out, the output so far', async () => {
      const pidFile = join(dir, `bg${++counter}`);
      const rec = await record(script('sh', `echo before\nsleep 60 &\necho $! >${pidFile}\nwait\necho after\n`, 1));
      const started = Date.now();
      const run = step('run-script', rec);
      expect(run).toEqual({ code: 0, stdout: 'timed out after 1 s, ended\n', stderr: '' });
      expect(Date.now() - started).toBeLessThan(20_000);
      const result = await json(join(rec, 'result.json'));
      expect(result).toEqual({
        exit_code: 124,
        output: 'before\n',
        duration_ms: expect.any(Number),
        details: { timed_out: true, timeout_seconds: 1 },
      });
      expect(result.duration_ms).toBeGreaterThanOrEqual(1000);
      // The script's child, in its group, ended with it.
      expect(gone(Number(await readFile(pidFile, 'utf8')))).toBe(true);
    });

    it('a group that ignores SIGTERM gets SIGKILL after the grace period', async () => {
      const pidFile = join(dir, `bg${++counter}`);
      const rec = await record(
        script('sh', `trap '' TERM\necho before\nsleep 60 &\necho $! >${pidFile}\nwait\necho after\n`, 1),
      );
      const out = call(`h.run_script(${JSON.stringify(rec)}, grace=0.5)`);
      expect(out).toBe('timed out after 1 s, ended\n');
      expect(await json(join(rec, 'result.json'))).toMatchObject({
        exit_code: 124,
        output: 'before\n',
        details: { timed_out: true, timeout_seconds: 1 },
      });
      expect(gone(Number(await readFile(pidFile, 'utf8')))).toBe(true);
    });

    it('an output over 64 KiB: its last 64 KiB', async () => {
      const rec = await record(
        script('python3', 'import sys\nsys.stdout.write("x" * 100000)\nsys.stdout.write("é" * 10 + "END")\n'),
      );
      step('run-script', rec);
      const { output } = await json(join(rec, 'result.json'));
      expect(Buffer.byteLength(output)).toBeLessThanOrEqual(65536);
      expect(Buffer.byteLength(output)).toBeGreaterThan(65530);
      expect(output.endsWith(`${'é'.repeat(10)}END`)).toBe(true);
    });

    it('parameters it cannot use: exit 1 with one line, nothing run, no result', async () => {
      const perl = await record({ type: 'script', parameters: { interpreter: 'perl', script: 'print 1' } });
      expect(step('run-script', perl)).toEqual({
        code: 1,
        stdout: '',
        stderr: 'run-script: the interpreter is none of sh, bash, python3\n',
      });
      expect(await readdir(perl)).toEqual(['action.json']);
      // The others in one python3 start, as the step raises them.
      const refused: [Record<string, unknown>, string][] = [
        [{ interpreter: 'sh', script: '' }, 'the action has no script'],
        [{ interpreter: 'sh' }, 'the action has no script'],
        [
          { interpreter: 'sh', script: 'true', timeout_seconds: 0 },
          'timeout_seconds must be a whole number from 1 to 3600',
        ],
        [
          { interpreter: 'sh', script: 'true', timeout_seconds: '5' },
          'timeout_seconds must be a whole number from 1 to 3600',
        ],
        [
          { interpreter: 'sh', script: 'true', timeout_seconds: 3601 },
          'timeout_seconds must be a whole number from 1 to 3600',
        ],
        [
          { interpreter: 'sh', script: 'true', timeout_seconds: true },
          'timeout_seconds must be a whole number from 1 to 3600',
        ],
      ];
      const recs = await Promise.all(refused.map(([parameters]) => record({ type: 'script', parameters })));
      const out = call(
        `for rec in ${JSON.stringify(recs)}:\n  try:\n    h.run_script(rec)\n    print("ran")\n  except ValueError as e:\n    print(e)`,
      );
      expect(out).toBe(refused.map(([, message]) => `${message}\n`).join(''));
      for (const rec of recs) expect(await readdir(rec)).toEqual(['action.json']);
    });
  });

  describe('action-result', () => {
    it('the exit code, the output’s tail, the duration and the details a step left, privately', async () => {
      const rec = await record({ type: 'apply_updates' });
      await writeFile(join(rec, 'output'), 'apt said things\n');
      await writeFile(join(rec, 'details.json'), JSON.stringify({ upgraded: [], reboot_required: false }));
      expect(step('action-result', rec, '100', '2500')).toEqual({ code: 0, stdout: '', stderr: '' });
      expect(await json(join(rec, 'result.json'))).toEqual({
        exit_code: 100,
        output: 'apt said things\n',
        duration_ms: 2500,
        details: { upgraded: [], reboot_required: false },
      });
      expect(await mode(join(rec, 'result.json'))).toBe(0o600);
    });

    it('interrupted: details.interrupted beside the output so far; no output is "", a negative duration 0', async () => {
      const rec = await record({ type: 'script' });
      await writeFile(join(rec, 'output'), 'half of it');
      step('action-result', rec, '1', '1200', 'interrupted');
      expect(await json(join(rec, 'result.json'))).toEqual({
        exit_code: 1,
        output: 'half of it',
        duration_ms: 1200,
        details: { interrupted: true },
      });
      const bare = await record({ type: 'reboot' });
      step('action-result', bare, '0', '-5');
      expect(await json(join(bare, 'result.json'))).toEqual({ exit_code: 0, output: '', duration_ms: 0 });
      expect(step('action-result', bare, '0', '5', 'crashed')).toEqual({
        code: 1,
        stdout: '',
        stderr: `action-result: the last argument is "interrupted" or none, not 'crashed'\n`,
      });
      expect(step('action-result', bare, 'zero', '5').code).toBe(1);
    });
  });

  it('tail_text: at most the limit in UTF-8 bytes, from a character’s start; bad bytes and NULs as U+FFFD', async () => {
    const valid = join(dir, `tail${++counter}`);
    await writeFile(valid, 'abé€😀'); // 2 + 2 + 3 + 4 bytes
    const invalid = join(dir, `tail${++counter}`);
    await writeFile(invalid, Buffer.from([0x78, 0xff, 0x00, 0x41]));
    const grown = join(dir, `tail${++counter}`);
    await writeFile(grown, Buffer.alloc(10, 0xff)); // ten bad bytes: ten U+FFFD of 3 bytes each
    const tail = (path: string, limit: number) => `print(json.dumps(h.tail_text(${JSON.stringify(path)}, ${limit})))`;
    const out = call(
      [
        'import json',
        tail(valid, 100),
        tail(valid, 8),
        tail(valid, 5),
        tail(valid, 3),
        tail(invalid, 100),
        tail(grown, 10),
        tail(join(dir, 'none'), 100),
      ].join('\n'),
    );
    expect(
      out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(['abé€😀', '€😀', '😀', '', 'x\ufffd\ufffdA', '\ufffd'.repeat(3), '']);
  });

  describe('reboot-params', () => {
    it('the delay (default 60) and the message for logged-in users, private', async () => {
      const plain = await record({ type: 'reboot', parameters: {} });
      expect(step('reboot-params', plain)).toEqual({ code: 0, stdout: '60\n', stderr: '' });
      expect(await readFile(join(plain, 'message'), 'utf8')).toBe('This computer restarts in 60 seconds.\n');
      expect(await mode(join(plain, 'message'))).toBe(0o600);

      const told = await record({
        type: 'reboot',
        parameters: { delay_seconds: 0, message: 'Kernel\nupdate, bitte speichern' },
      });
      expect(step('reboot-params', told).stdout).toBe('0\n');
      expect(await readFile(join(told, 'message'), 'utf8')).toBe(
        'Kernel update, bitte speichern\nThis computer restarts in 0 seconds.\n',
      );
    });

    it('a delay or message out of range: exit 1 with one line', async () => {
      const late = await record({ type: 'reboot', parameters: { delay_seconds: 3601 } });
      expect(step('reboot-params', late)).toEqual({
        code: 1,
        stdout: '',
        stderr: 'reboot-params: delay_seconds must be a whole number from 0 to 3600\n',
      });
      const refused: [Record<string, unknown>, string][] = [
        [{ delay_seconds: -1 }, 'delay_seconds must be a whole number from 0 to 3600'],
        [{ delay_seconds: true }, 'delay_seconds must be a whole number from 0 to 3600'],
        [{ message: 'x'.repeat(201) }, 'the message is not a text of at most 200 characters'],
        [{ message: 42 }, 'the message is not a text of at most 200 characters'],
      ];
      const recs = await Promise.all(refused.map(([parameters]) => record({ type: 'reboot', parameters })));
      const out = call(
        `for rec in ${JSON.stringify(recs)}:\n  try:\n    h.reboot_params(rec)\n  except ValueError as e:\n    print(e)`,
      );
      expect(out).toBe(refused.map(([, message]) => `${message}\n`).join(''));
    });
  });
});
