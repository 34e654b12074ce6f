import fs from 'node:fs';
import path from 'node:path';

/**
 * The docs name only files that exist (issue 14: docs/api.md cited spec files that are not in the repository).
 * Checked: markdown link targets, and file names in backticks (`worker/deliveryQueue.ts`, `decisions.md`).
 */
const ROOT = path.resolve(__dirname, '..');
const DOCS = ['README.md', 'BENCHMARKS.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const FILE = /^[\w@./-]+\.(md|ts|cjs|js|json|ya?ml)$/;

/** Every file of the repository by its base name, for names given without their folder. */
function baseNames(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (['node_modules', '.git', '.data', '.tools', 'scratch'].includes(e.name)) continue;
      if (e.isDirectory()) walk(path.join(dir, e.name));
      else names.add(e.name);
    }
  };
  walk(ROOT);
  return names;
}

test.each(DOCS)('%s names only files that exist', (doc) => {
  const text = fs.readFileSync(path.join(ROOT, doc), 'utf8');
  const names = baseNames();
  const missing: string[] = [];
  const exists = (ref: string) => {
    const clean = ref.split('#')[0]!.split(':')[0]!;
    if (!clean) return true;
    if (clean.startsWith('node_modules/') || clean.startsWith('@')) return true; // a dependency's file
    if (clean.startsWith('/') || /^[A-Z_]+\//.test(clean)) return true; // outside the repository: /tmp/…, DATA_DIR/…
    return fs.existsSync(path.join(ROOT, clean)) || fs.existsSync(path.join(ROOT, path.dirname(doc), clean)) || (!clean.includes('/') && names.has(clean));
  };
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (!/^(https?:|mailto:|#)/.test(target!) && !exists(target!)) missing.push(target!);
  }
  for (const [, code] of text.matchAll(/`([^`\s]+)`/g)) {
    const ref = code!.replace(/:\d+(-\d+)?$/, '');
    if (FILE.test(ref) && !ref.includes('*') && !exists(ref)) missing.push(ref);
  }
  expect(missing).toEqual([]);
});

test('docs/api.md prints the permission matrix the route table gives now (run `npm run docs:matrix` after changing a permission)', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { API_DOC, withMatrix } = require('../bin/permission-matrix') as typeof import('../bin/permission-matrix');
  const doc = fs.readFileSync(API_DOC, 'utf8');
  expect(withMatrix(doc)).toBe(doc);
  expect(doc).toContain('| `DELETE /contacts/:id` | write | ✓ | ✓ | ✓ | · | ✓ | · |');
});
