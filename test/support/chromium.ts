/**
 * How the browser tests start Debian's Chromium (playwright-core, no downloaded browser):
 * headless, and without the background connections this machine's closed network refuses.
 */
import { type Browser, chromium } from 'playwright-core';
import { inject } from 'vitest';
import { TOOLS } from './tools.ts';

export const CHROMIUM_OPTIONS = {
  executablePath: TOOLS.chromium.path,
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
};

/**
 * The run's one Chromium (chromium_setup.ts), connected to; a Chromium of the file's own
 * under a configuration without that setup. Either way a test file makes its own
 * contexts, and `close()` at its end (which only disconnects from the shared one).
 */
export async function sharedChromium(): Promise<Browser> {
  const launcher = inject('chromiumLauncher');
  if (!launcher) return chromium.launch(CHROMIUM_OPTIONS);
  const res = await fetch(launcher);
  const answer = await res.text();
  if (res.status !== 200) throw new Error(`the run's Chromium did not start: ${answer}`);
  return chromium.connect(answer);
}
