import fs from 'node:fs';
import path from 'node:path';
import { CONSOLE_DIR } from '../../api/console';
import { buildWeb, type WebBuild } from '../../scripts/buildWeb';

/**
 * The console's weight: the JavaScript of a first load of /app (index.html's entry and every module it imports
 * statically, from the build's metafile) is at most 120 KB gzipped; the pages are chunks of their own, loaded when
 * visited. Measured on the build Jest's global setup made (dist/web).
 */
const BUDGET = 120 * 1024;
let built: WebBuild;

beforeAll(async () => {
  const file = path.join(CONSOLE_DIR, 'build.json');
  built = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) as WebBuild : await buildWeb({ quiet: true });
}, 60_000);

const gzipped = (file: string) => fs.statSync(path.join(CONSOLE_DIR, 'assets', `${file}.gz`)).size;

test('the first load of /app is at most 120 KB of JavaScript gzipped, and what index.html loads is that first load', () => {
  const first = built.initialJs.reduce((sum, f) => sum + gzipped(f), 0);
  process.stdout.write(`console first load: ${(first / 1024).toFixed(1)} KB of JavaScript gzipped in ${built.initialJs.length} files\n`);
  expect(first).toBeGreaterThan(0);
  expect(first).toBeLessThanOrEqual(BUDGET);
  const html = fs.readFileSync(path.join(CONSOLE_DIR, 'index.html'), 'utf8');
  const scripts = [...html.matchAll(/\/app\/assets\/([^"]+\.js)/g)].map((m) => m[1]);
  expect(new Set(scripts)).toEqual(new Set(built.initialJs));
});

test('every page is a lazy chunk of its own, outside the first load', () => {
  const pages = fs.readdirSync(path.resolve(__dirname, '..', '..', 'web', 'pages'))
    .filter((f) => f.endsWith('.tsx') && f !== 'index.tsx' && f !== 'AuthLayout.tsx').map((f) => f.replace(/\.tsx$/, ''));
  expect(pages).toEqual(expect.arrayContaining(['Login', 'Emails', 'EmailDetail', 'Overview']));
  for (const page of pages) {
    const chunk = built.allJs.find((f) => f.startsWith(`${page}-`));
    expect([page, chunk !== undefined]).toEqual([page, true]);
    expect(built.initialJs).not.toContain(chunk);
  }
});
