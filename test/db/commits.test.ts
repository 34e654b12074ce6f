import { createKnex } from '../../db/database';
import { ADMIT_KEYS, admit, windowBindings } from '../../projects/access';
import { parseKey } from '../../projects/keys';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * The rate-count statements commit without waiting for their WAL flush (db/commits.ts), and that setting lasts only to
 * the end of their own transaction: the next statement on the same connection (a send's store, on the pool) commits
 * durably again. The test cluster runs with synchronous_commit off, so the connection here asks for it on.
 */
let db: TestDatabase;
beforeAll(async () => { db = await createTestDatabase(); });
afterAll(async () => { await db.close(); });

test('admit commits without a flush, and the connection is durable again for its next statement', async () => {
  const project = await createProject('Commits');
  const u = new URL(db.url);
  u.searchParams.set('options', '-c synchronous_commit=on');
  // One connection: the statement after admit runs where admit ran.
  const knex = createKnex(u.toString(), { poolMax: 1 });
  try {
    expect((await knex.raw('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('on');
    const admitted = await admit(knex, project.secretKey);
    expect(admitted).toMatchObject({ projectId: project.id });
    expect((await knex.raw('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('on');

    // Within the statement's transaction, the setting is off (which is why it must never run in a caller's transaction).
    const lookup = parseKey(project.secretKey)!.lookup;
    const inside = await knex.transaction(async (trx) => {
      await trx.raw(ADMIT_KEYS, [[lookup], [lookup], ...windowBindings(Date.now())]);
      return (await trx.raw('SHOW synchronous_commit')).rows[0].synchronous_commit as string;
    });
    expect(inside).toBe('off');
    expect((await knex.raw('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('on');
  } finally {
    await knex.destroy();
  }
});
