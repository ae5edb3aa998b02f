/**
 * Starts the real service as a user would (`tsx api/main_node.ts`, what `npm start` runs;
 * or the Deno entry, what `deno task api` runs) in a child process, for end-to-end tests
 * and the bench, and stops it with a signal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../api/runtime/embedded_postgres.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface ServiceProcess {
  base: string;
  child: ChildProcess;
  output(): string;
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * The command of `deno task api` from deno.json (one place for its permissions), run
 * directly so the signal and the CPU accounting reach the Deno process itself.
 */
function denoApiCommand(): { command: string; args: string[] } {
  const task = (JSON.parse(readFileSync(`${root}/deno.json`, 'utf8')) as { tasks: { api: string } }).tasks.api;
  const [command, ...args] = task.split(/\s+/);
  return { command: `${root}/${command}`, args };
}

export async function startService(
  env: Record<string, string | undefined>,
  args: string[] = [],
  runtime: 'node' | 'deno' = 'node',
): Promise<ServiceProcess> {
  const port = await freePort();
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, PORT: String(port), LOG_LEVEL: 'info', ...env })) {
    if (v !== undefined) childEnv[k] = v;
  }
  // What `npm start` runs, without npm in between, so the signal reaches the service.
  const { command, args: commandArgs } =
    runtime === 'deno'
      ? denoApiCommand()
      : { command: process.execPath, args: ['--import', 'tsx', 'api/main_node.ts'] };
  const ready = runtime === 'deno' ? 'deno api ready' : 'service ready';
  const child = spawn(command, [...commandArgs, ...args], {
    cwd: root,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited early (${child.exitCode}):\n${output}`);
    if (output.includes(ready)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`service did not start in time:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
