/**
 * Starts the real service as a user would (`tsx api/main_node.ts`, what `npm start` runs;
 * or the Deno entry, what `deno task api` runs) in a child process, for end-to-end tests
 * and the bench, and stops it with a signal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../api/runtime/embedded_postgres.ts';
import type { TestContext, TestResponse } from './app.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface ServiceProcess {
  base: string;
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
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

export interface LaunchOptions {
  /** Lead a process group of its own, as a shell's foreground job does (signals to -pid reach the group). */
  processGroup?: boolean;
  /** Run `npm start` itself (npm, then node), as a user or a supervisor does. */
  viaNpm?: boolean;
  /** Options for node before the script (e.g. `--cpu-prof`); Node only, not with `viaNpm`. */
  nodeArgs?: string[];
}

/** Starts the service without waiting: resolves with its exit code and output once it exits. */
export async function runServiceToExit(
  env: Record<string, string | undefined>,
  timeoutMs = 60_000,
  options: LaunchOptions = {},
): Promise<{ code: number | null; output: string; ms: number }> {
  const started = Date.now();
  const { child, output, exited } = await launch(env, [], 'node', options);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await exited;
  clearTimeout(timer);
  return { code, output: output(), ms: Date.now() - started };
}

async function launch(
  env: Record<string, string | undefined>,
  args: string[],
  runtime: 'node' | 'deno',
  options: LaunchOptions,
) {
  const port = await freePort();
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, PORT: String(port), LOG_LEVEL: 'info', ...env })) {
    if (v !== undefined) childEnv[k] = v;
  }
  // What `npm start` runs, without npm in between, so the signal reaches the service.
  const { command, args: commandArgs } =
    runtime === 'deno'
      ? denoApiCommand()
      : options.viaNpm
        ? { command: 'npm', args: ['start', '--silent', '--'] }
        : { command: process.execPath, args: [...(options.nodeArgs ?? []), '--import', 'tsx', 'api/main_node.ts'] };
  const child = spawn(command, [...commandArgs, ...args], {
    cwd: root,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.processGroup ?? false,
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, output: () => output, base: `http://127.0.0.1:${childEnv.PORT}` };
}

export async function startService(
  env: Record<string, string | undefined>,
  args: string[] = [],
  runtime: 'node' | 'deno' = 'node',
  options: LaunchOptions = {},
): Promise<ServiceProcess> {
  const ready = runtime === 'deno' ? 'deno api ready' : 'service ready';
  const { child, exited, output: outputOf, base } = await launch(env, args, runtime, options);
  let output = '';
  const refresh = () => (output = outputOf());
  const deadline = Date.now() + 90_000;
  for (;;) {
    refresh();
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
    output: outputOf,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * The test builders' context over HTTP to a service process: `request` as the in-process
 * one has it (JSON bodies, the given token unless told otherwise). `base` is read at each
 * call, since the process starts after the context is made.
 */
export function httpTestContext(base: () => string, defaultToken: string): TestContext {
  return {
    async request(method: string, path: string, options: { token?: string | null; body?: unknown } = {}) {
      const token = options.token === undefined ? defaultToken : options.token;
      const res = await fetch(`${base()}${path}`, {
        method,
        headers: {
          ...(token === null ? {} : { authorization: `Bearer ${token}` }),
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
      const text = await res.text();
      const json = res.headers.get('content-type')?.includes('application/json') && text;
      return { status: res.status, body: json ? JSON.parse(text) : text, headers: res.headers } as TestResponse;
    },
  } as unknown as TestContext;
}
