import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { nodeRequire } from './nodeRealm';

/**
 * playwright-core as Node itself loads it, once per Jest worker, not once per test file: Jest's module registry is the
 * file's own, and its 3.5 MB bundle (with the stack traces Jest maps for each of its calls) cost the page tests ~45
 * CPU-seconds of a run's Jest workers, loaded again by each of them. It keeps no state of a file's (each launches its
 * own browser) and only strings and plain values cross between it and the tests.
 */
const { chromium } = nodeRequire(__filename)('playwright-core') as typeof import('playwright-core');

/** How to get the browser the page tests drive (Debian's Chromium with playwright-core). */
export const CHROMIUM_HOW = 'apt-get install -y chromium-headless-shell (or chromium), or set CHROMIUM_PATH';

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * CHROMIUM_PATH when set (and only it: a wrong one is a mistake to see), else Debian's chromium-headless-shell, else its
 * chromium, in /usr/bin or on PATH. The headless shell is the same Chromium (Blink, V8, the same version in Debian)
 * built without the browser's window layer: a console test file drove it with 38 % less of the machine's CPU than the
 * full browser in its headless mode (52 against 83 CPU-s, BENCHMARKS.md section 47), and the page tests are most of a
 * run's CPU.
 */
export function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return executable(process.env.CHROMIUM_PATH) ? process.env.CHROMIUM_PATH : undefined;
  const dirs = ['/usr/bin', ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean)];
  for (const name of ['chromium-headless-shell', 'chromium', 'chromium-browser']) {
    for (const dir of dirs) if (executable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/**
 * Headless Chromium at `executablePath`. The flags keep it off the network (this machine refuses its background
 * connections) and out of a sandbox (it runs as root here).
 */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * Registers a browser test file's tests with the Chromium they need: `body(executablePath)` when there is one. Without
 * it, on a developer's machine the file skips with one line that says how to get it; under CI=true it fails instead
 * (CI never skips a page test).
 */
export function withChromium(what: string, body: (executablePath: string) => void): void {
  const found = findChromium();
  if (found) {
    body(found);
    return;
  }
  const missing = `no Chromium${process.env.CHROMIUM_PATH ? ` at CHROMIUM_PATH=${process.env.CHROMIUM_PATH}` : ''} for ${what}: ${CHROMIUM_HOW}`;
  if (process.env.CI === 'true') {
    test(`Chromium is installed (CI never skips ${what})`, () => { throw new Error(`CI needs Chromium: ${missing}`); });
    return;
  }
  process.stdout.write(`skipped: ${missing}\n`);
  test.skip(`skipped: ${missing}`, () => undefined);
}
