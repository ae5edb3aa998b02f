/**
 * Global setup of the skip rule (`tools.ts`): a folder where test files record the tools
 * they missed, and at the end of the run one line per missing tool with its install command.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { installHint, TOOLS, type Tool } from './tools.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where test files record the tools they were skipped for. */
    missingToolsDir: string;
  }
}

let dir = '';

export function setup(project: TestProject) {
  dir = mkdtempSync(join(tmpdir(), 'fleet-test-tools-'));
  project.provide('missingToolsDir', dir);
}

export function teardown() {
  if (!dir) return;
  const missing = readdirSync(dir).filter((name): name is Tool => name in TOOLS);
  rmSync(dir, { recursive: true, force: true });
  for (const tool of missing.sort()) {
    console.log(`skipped: tests that need ${installHint(tool)}`);
  }
}
