/**
 * How the browser tests start Debian's Chromium (playwright-core, no downloaded browser):
 * headless, and without the background connections this machine's closed network refuses.
 */
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
