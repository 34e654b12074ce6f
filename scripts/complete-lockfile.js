#!/usr/bin/env node
// Completes package-lock.json with the other platforms' optional native packages (@swc/core-darwin-arm64, …).
//
// Why: the package registry reachable from Herald's build machines serves only the packages of the platform it
// runs on. `npm install` then silently leaves the other platforms' optional binaries out of the lock file, and
// `npm ci` refuses such a lock file ("Missing: … from lock file"). Each missing package is added as an optional
// entry with the os/cpu its name declares, so `npm ci` sees the lock file complete and skips them on this
// platform, as it would with a lock file written where every platform's package is available.
// Run by `npm run lock:complete` after changing dependencies; idempotent.
const fs = require('node:fs');
const path = require('node:path');

const lockPath = path.join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(lockPath, 'utf8'));
const packages = lock.packages;
const OS = ['darwin', 'linux', 'win32', 'android', 'freebsd', 'openharmony', 'sunos', 'aix', 'netbsd', 'openbsd'];
const CPU = ['arm64', 'x64', 'arm', 'ia32', 'ppc64', 's390x', 'riscv64', 'loong64', 'mips64el', 'wasm32'];

let added = 0;
for (const [location, meta] of Object.entries(packages)) {
  for (const [name, range] of Object.entries(meta.optionalDependencies ?? {})) {
    // Where npm would place it: next to the dependent, or hoisted to the top.
    const nested = `${location ? `${location}/` : ''}node_modules/${name}`;
    const top = `node_modules/${name}`;
    if (packages[nested] || packages[top]) continue;
    const parts = name.split('/').pop().split('-');
    const os = parts.find((p) => OS.includes(p));
    const cpu = parts.find((p) => CPU.includes(p));
    if (!os || !cpu) continue; // not a platform binary: leave npm's decision alone
    const libc = parts.includes('musl') ? ['musl'] : parts.includes('gnu') || parts.includes('gnueabihf') ? ['glibc'] : undefined;
    packages[top] = { version: range.replace(/^[\^~=]/, ''), optional: true, os: [os], cpu: [cpu], ...(libc ? { libc } : {}) };
    added++;
  }
}
if (added) {
  lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
  fs.writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
}
console.log(`complete-lockfile: ${added} optional platform package(s) added`);
