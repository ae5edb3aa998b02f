/**
 * Global setup of one Chromium for the whole run: the browser test files connect to it
 * (`sharedChromium()` in chromium.ts), each with a context of its own, instead of each
 * launching its own browser. It starts when the first file asks for it, so a run without
 * a browser test starts none: a loopback address answers with the browser's endpoint.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserServer } from 'playwright-core';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Answers GET with the WebSocket endpoint of the run's Chromium, launching it the first time. */
    chromiumLauncher: string;
  }
}

let server: Server | null = null;
let browser: Promise<BrowserServer> | null = null;

export async function setup(project: TestProject) {
  server = createServer((req, res) => {
    if (req.method !== 'GET') {
      res.writeHead(405).end();
      return;
    }
    browser ??= Promise.all([import('playwright-core'), import('./chromium.ts')]).then(([{ chromium }, options]) =>
      chromium.launchServer(options.CHROMIUM_OPTIONS),
    );
    browser.then(
      (b) => res.writeHead(200, { 'content-type': 'text/plain' }).end(b.wsEndpoint()),
      (err: Error) => {
        browser = null; // the next file tries again, and reports its own failure
        res.writeHead(500, { 'content-type': 'text/plain' }).end(err.message);
      },
    );
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  project.provide('chromiumLauncher', `http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
}

export async function teardown() {
  await new Promise((resolve) => server?.close(resolve));
  await (await browser?.catch(() => null))?.close();
}
