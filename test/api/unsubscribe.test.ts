import { unsubscribeToken } from '../../mail/unsubscribe';
import { createTestContext, TEST_SECRET, type TestContext } from '../support/app';

let t: TestContext;
beforeAll(async () => { t = await createTestContext(); });
afterAll(async () => { await t.close(); });

async function contact(email: string): Promise<{ id: string }> {
  const res = await t.http().post('/contacts').set({ Authorization: `Bearer ${t.project.secretKey}` }).send({ email });
  return res.body.data;
}

test('GET shows a confirmation page and changes nothing (link scanners follow GETs)', async () => {
  const c = await contact('scan@example.com');
  const res = await t.http().get(`/unsubscribe/${unsubscribeToken(TEST_SECRET, { projectId: t.project.id, contactId: c.id })}`);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/text\/html/);
  expect(res.text).toContain('<form method="post">');
  expect((await t.db.knex('contacts').where({ id: c.id }).first()).subscribed).toBe(true);
});

test('POST (one click, RFC 8058) unsubscribes once and records contact.unsubscribed once', async () => {
  const c = await contact('bye@example.com');
  const url = `/unsubscribe/${unsubscribeToken(TEST_SECRET, { projectId: t.project.id, contactId: c.id })}`;
  const res = await t.http().post(url).type('form').send('List-Unsubscribe=One-Click');
  expect(res.status).toBe(200);
  expect(res.text).toContain('unsubscribed');
  expect((await t.db.knex('contacts').where({ id: c.id }).first()).subscribed).toBe(false);
  expect((await t.http().post(url)).status).toBe(200); // again: same answer, no second event
  const events = await t.db.knex('events').where({ project_id: t.project.id, contact_id: c.id, name: 'contact.unsubscribed' });
  expect(events).toHaveLength(1);
});

test('forged or foreign tokens are 404 and change nothing', async () => {
  const c = await contact('safe@example.com');
  const other = await t.newProject('other');
  const wrongSecret = unsubscribeToken(Buffer.from('x'.repeat(40)), { projectId: t.project.id, contactId: c.id });
  const wrongProject = unsubscribeToken(TEST_SECRET, { projectId: other.id, contactId: c.id });
  for (const token of [wrongSecret, wrongProject, 'garbage', 'a.b']) {
    expect((await t.http().post(`/unsubscribe/${token}`)).status).toBe(404);
    expect((await t.http().get(`/unsubscribe/${token}`)).status).toBe(404);
  }
  expect((await t.db.knex('contacts').where({ id: c.id }).first()).subscribed).toBe(true);
});
