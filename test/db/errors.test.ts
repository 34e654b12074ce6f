import { Contact } from '../../db/models/Contact';
import { isDataError, sqlState } from '../../db/errors';
import { createTestDatabase, type TestDatabase } from '../support/db';

let db: TestDatabase;
beforeAll(async () => { db = await createTestDatabase(); });
afterAll(async () => { await db.close(); });

test('a data exception is one whether knex raised it or Objection wrapped it', async () => {
  const viaKnex = await db.knex.raw("SELECT '0000-01-01'::date").catch((e: unknown) => e);
  const viaObjection = await Contact.query(db.knex).where('created_at', '<', '0000-01-01T00:00:00Z').catch((e: unknown) => e);
  for (const err of [viaKnex, viaObjection]) {
    expect(sqlState(err)).toMatch(/^22/);
    expect(isDataError(err)).toBe(true);
  }
  // Objection's wrapper keeps pg's error on nativeError, not on code.
  expect((viaObjection as { nativeError?: unknown }).nativeError).toBeDefined();
  expect(sqlState(new Error('connect ECONNREFUSED'))).toBeUndefined();
});
