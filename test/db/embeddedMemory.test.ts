import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { memorySettings } from '../../db/embedded';

/**
 * The embedded server's memory (db/embedded.ts memorySettings): a quarter of the machine for shared buffers, between
 * PostgreSQL's own 128 MB and 8 GB, three quarters as the planner's cache estimate, and pg_prewarm preloaded when the
 * binaries ship it (a server would not start with a preloaded library that is missing).
 */
const GB = 1024 ** 3;
const ext = process.platform === 'win32' ? '.dll' : process.platform === 'darwin' ? '.dylib' : '.so';

describe('the embedded server\'s memory settings', () => {
  const withLib = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-pglib-'));
  const withoutLib = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-pglib-'));
  beforeAll(() => fs.writeFileSync(path.join(withLib, `pg_prewarm${ext}`), ''));
  afterAll(() => [withLib, withoutLib].forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  test('a quarter of the memory for shared buffers, three quarters as the cache estimate', async () => {
    expect(await memorySettings(24 * GB, withLib)).toEqual({ shared_buffers: '6144MB', effective_cache_size: '18432MB', shared_preload_libraries: 'pg_prewarm' });
    expect(await memorySettings(2 * GB, withLib)).toEqual({ shared_buffers: '512MB', effective_cache_size: '1536MB', shared_preload_libraries: 'pg_prewarm' });
  });

  test('never below PostgreSQL\'s own 128 MB, never above 8 GB', async () => {
    expect((await memorySettings(256 * 1024 ** 2, withLib)).shared_buffers).toBe('128MB');
    expect((await memorySettings(256 * 1024 ** 2, withLib)).effective_cache_size).toBe('192MB');
    expect((await memorySettings(256 * GB, withLib)).shared_buffers).toBe('8192MB');
  });

  test('pg_prewarm is preloaded only when the binaries ship it', async () => {
    expect(await memorySettings(8 * GB, withoutLib)).toEqual({ shared_buffers: '2048MB', effective_cache_size: '6144MB' });
  });

  test('the binaries installed here ship it', async () => {
    expect((await memorySettings()).shared_preload_libraries).toBe('pg_prewarm');
  });
});
