/**
 * Runs the build script as a child process: argument array, no shell interpolation, a
 * minimal environment (the worker's own holds DATABASE_URL, ADMIN_TOKEN and the WLAN key,
 * none of which the script needs), a hard timeout and the worker's abort signal, both of
 * which stop the whole process group (bash, its pipeline and xorriso), and a watchdog in
 * that group which stops it when the worker dies. Reads the script's line protocol:
 * `PROGRESS n` and `WARNING text` on stdout, `ERROR text` on stderr.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';

export type ScriptOutcome =
  | { kind: 'ok' }
  | { kind: 'failed'; message: string }
  | { kind: 'timeout'; message: string }
  | { kind: 'aborted' };

export interface ScriptOptions {
  script: string;
  /** FLEET_ISO_* inputs; merged over PATH, HOME, TMPDIR and LC_ALL only. */
  env: Record<string, string>;
  timeoutMs: number;
  signal: AbortSignal;
  onProgress(percent: number): void;
  onWarning(text: string): void;
  /** Any other output line (xorriso's chatter), for a debug log. */
  onOutput(line: string): void;
}

/** Grace between SIGTERM and SIGKILL of the process group. */
const KILL_GRACE_MS = 3000;

/**
 * Runs in front of the build script, which it then becomes (exec: same pid, the group's
 * leader). Its background loop kills the group once the worker that started it is gone:
 * SIGKILL of the worker included, which Node cannot turn into a parent-death signal. So a
 * dead worker's build never writes on into the work folder that the dead build check
 * removes. The loop ends by itself when the script does. Linux: it reads /proc.
 */
const WATCHDOG = `
worker=$PPID leader=$$
parent_of() { local stat ppid; read -r stat <"/proc/$1/stat" 2>/dev/null || return 0; read -r _ ppid _ <<<"\${stat##*) }"; echo "$ppid"; }
(
  trap '' TERM
  self=$BASHPID
  while sleep 1; do
    [[ $(parent_of "$self") == "$leader" ]] || exit 0
    [[ $(parent_of "$leader") == "$worker" ]] && continue
    kill -TERM -- "-$leader"
    sleep 2
    kill -KILL -- "-$leader"
  done
) </dev/null >/dev/null 2>&1 &
exec bash "$1"
`;

export function runBuildScript(options: ScriptOptions): Promise<ScriptOutcome> {
  return new Promise((resolve) => {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      TMPDIR: process.env.TMPDIR ?? '/tmp',
      LC_ALL: 'C',
      ...options.env,
    };
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn('bash', ['-c', WATCHDOG, 'fleet-build', options.script], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (err) {
      resolve({ kind: 'failed', message: `the build script could not be started: ${(err as Error).message}` });
      return;
    }
    let stoppedFor: 'timeout' | 'aborted' | null = null;
    let lastError: string | null = null;
    const tail: string[] = [];
    let killTimer: NodeJS.Timeout | undefined;

    const stop = (why: 'timeout' | 'aborted') => {
      if (stoppedFor || child.exitCode !== null || child.pid === undefined) return;
      stoppedFor = why;
      const group = -child.pid;
      const kill = (sig: NodeJS.Signals) => {
        try {
          process.kill(group, sig);
        } catch {
          // Already gone.
        }
      };
      kill('SIGTERM');
      killTimer = setTimeout(() => kill('SIGKILL'), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => stop('timeout'), options.timeoutMs);
    const onAbort = () => stop('aborted');
    if (options.signal.aborted) onAbort();
    else options.signal.addEventListener('abort', onAbort, { once: true });

    createInterface({ input: child.stdout }).on('line', (line) => {
      const progress = /^PROGRESS (\d{1,3})$/.exec(line);
      if (progress) options.onProgress(Math.min(100, Number(progress[1])));
      else if (line.startsWith('WARNING ')) options.onWarning(line.slice(8));
      else options.onOutput(line);
    });
    createInterface({ input: child.stderr }).on('line', (line) => {
      if (line.startsWith('ERROR ')) lastError = line.slice(6);
      else {
        tail.push(line);
        if (tail.length > 5) tail.shift();
      }
      options.onOutput(line);
    });

    let settled = false;
    const finish = (outcome: ScriptOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(killTimer);
      options.signal.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    child.on('error', (err) => {
      finish({ kind: 'failed', message: `the build script could not be started: ${err.message}` });
    });
    child.on('close', (code, signal) => {
      if (stoppedFor === 'aborted') return finish({ kind: 'aborted' });
      if (stoppedFor === 'timeout') {
        return finish({
          kind: 'timeout',
          message: `the build did not finish within ${formatDuration(options.timeoutMs)} and was stopped`,
        });
      }
      if (code === 0) return finish({ kind: 'ok' });
      if (lastError) return finish({ kind: 'failed', message: lastError });
      const last = tail[tail.length - 1]?.replace(/^xorriso: /, '');
      const how = signal ? `was killed by ${signal}` : `failed (exit ${code})`;
      finish({ kind: 'failed', message: `the build script ${how}${last ? `: ${last}` : ''}` });
    });
  });
}

function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  return `${Math.round(ms / 100) / 10} seconds`;
}
