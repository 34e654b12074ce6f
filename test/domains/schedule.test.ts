import { getDomain, isVerifiedSender } from '../../db/queries/domains';
import { createDomain, saveCheck } from '../../domains/rows';
import { nextCheckSlot } from '../../domains/checks';
import { workflowId } from '../../workflows/registry';
import type { WorkflowContext } from '../../workflows/context';
import { checkDomains, DOMAIN_BATCHES_PER_RUN, DOMAIN_CHECK_BATCH } from '../../workflows/checkDomains';
import { createProject } from '../../projects/service';
import { dkimRecordName, dkimRecordValue } from '../../domains/records';
import { TEST_SECRET } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startDnsServer, type TestDnsServer } from '../support/dns';
import { startTestEngine, type TestEngine } from '../support/engine';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * The periodic re-check: its engine-neutral logic against a scripted context, then one run on the real embedded
 * engine (DBOS) against the loopback DNS server — statuses change in the database, and the next slot's run is scheduled.
 * (The Temporal side is the same logic: workflows/temporal.ts exports it, and test/temporal/bundle.test.ts bundles it.)
 */

describe('the workflow logic', () => {
  function scripted(domains: number) {
    const commands: string[] = [];
    let position = 0;
    const ctx: WorkflowContext = {
      continueAsNewSuggested: () => false,
      patched: () => true,
      webhooks: { callWebhook: async () => { throw new Error('not used'); } },
      receive: async () => { throw new Error('not used'); },
      activities: {
        ...({} as WorkflowContext['activities']),
        checkDomainBatch: async (r) => {
          commands.push(`batch:${r.after ?? 'start'}`);
          const n = Math.min(r.size, domains - position);
          position += n;
          return { checked: n, verified: 0, failed: 0, last: n ? `d${position}` : r.after, done: n < r.size };
        },
        scheduleDomainChecks: async (r) => { commands.push(`schedule:${r.after}`); return r.after + 1; },
      },
      sleep: async () => undefined,
      now: async () => 0,
      isCancellation: () => false,
      nonCancellable: (fn) => fn(),
      continueAsNew: async (_w, input) => { commands.push(`continueAsNew:${JSON.stringify(input)}`); throw new Error('continued'); },
    };
    return { ctx, commands };
  }

  test('walks every domain in batches, then schedules the next slot', async () => {
    const { ctx, commands } = scripted(DOMAIN_CHECK_BATCH * 2 + 3);
    await expect(checkDomains(ctx, { slot: 1000 })).resolves.toEqual({ checked: DOMAIN_CHECK_BATCH * 2 + 3 });
    expect(commands).toEqual(['batch:start', `batch:d${DOMAIN_CHECK_BATCH}`, `batch:d${DOMAIN_CHECK_BATCH * 2}`, 'schedule:1000']);
  });

  test('no domains: one empty batch, and the schedule goes on', async () => {
    const { ctx, commands } = scripted(0);
    await checkDomains(ctx, { slot: 5 });
    expect(commands).toEqual(['batch:start', 'schedule:5']);
  });

  test(`continues as new after ${DOMAIN_BATCHES_PER_RUN} batches, from the keyset position, before scheduling`, async () => {
    const { ctx, commands } = scripted(DOMAIN_CHECK_BATCH * (DOMAIN_BATCHES_PER_RUN + 5));
    await expect(checkDomains(ctx, { slot: 7 })).rejects.toThrow('continued');
    expect(commands.filter((c) => c.startsWith('batch:'))).toHaveLength(DOMAIN_BATCHES_PER_RUN);
    expect(commands.at(-1)).toBe(`continueAsNew:${JSON.stringify({ slot: 7, after: `d${DOMAIN_CHECK_BATCH * DOMAIN_BATCHES_PER_RUN}` })}`);
    expect(commands).not.toContain('schedule:7');
  });

  test('slots are whole intervals; ids name the slot', () => {
    const hour = 3_600_000;
    expect(nextCheckSlot(0, hour)).toBe(hour);
    expect(nextCheckSlot(hour - 1, hour)).toBe(hour);
    expect(nextCheckSlot(hour, hour)).toBe(2 * hour);
    expect(workflowId.checkDomains({ slot: Date.UTC(2026, 10, 22, 6) })).toBe('domain-checks-2026-11-22T06:00:00.000Z');
  });
});

describe('on the embedded engine (DBOS), against the loopback DNS server', () => {
  let db: TestDatabase;
  let dns: TestDnsServer;
  let smtp: TestSmtpServer;
  let engine: TestEngine;
  let projectId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    [dns, smtp] = await Promise.all([startDnsServer(), startSmtpServer()]);
    // The worker's activities read the DNS settings from the environment, as in production.
    process.env.DNS_SERVERS = dns.address;
    process.env.DNS_TIMEOUT_MS = '500';
    process.env.DNS_TRIES = '1';
    process.env.DOMAIN_CHECK_INTERVAL_MINUTES = '60';
    engine = await startTestEngine(db, smtp.url);
    projectId = (await createProject('Scheduled')).id;
  }, 60_000);
  afterAll(async () => {
    await engine.stop();
    await Promise.all([dns.close(), smtp.close()]);
    await db.close();
  });

  test('a run verifies what is published, fails what was lost, and schedules the next slot', async () => {
    const published = (await createDomain(db.knex, TEST_SECRET, projectId, 'published.example.net'))!;
    dns.set(dkimRecordName(published.domain, published.dkimSelector!), { TXT: [dkimRecordValue(published.dkimPublicKey!)] });
    // Verified by DNS earlier; its record has gone since.
    const lost = (await createDomain(db.knex, TEST_SECRET, projectId, 'lost.example.net'))!;
    await saveCheck(db.knex, projectId, lost.id, { DKIM: 'VERIFIED' });
    expect(await isVerifiedSender(db.knex, projectId, 'a@lost.example.net')).toBe(true);

    const slot = Date.now() - 1000;
    await engine.engine.start('checkDomains', { slot }, { id: workflowId.checkDomains({ slot }) });

    const deadline = Date.now() + 30_000;
    for (;;) {
      const [p, l] = await Promise.all([getDomain(db.knex, projectId, published.id), getDomain(db.knex, projectId, lost.id)]);
      if (p!.status === 'VERIFIED' && l!.status === 'FAILED') break;
      if (Date.now() > deadline) throw new Error(`statuses still ${p!.status} / ${l!.status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await isVerifiedSender(db.knex, projectId, 'a@published.example.net')).toBe(true);
    expect(await isVerifiedSender(db.knex, projectId, 'a@lost.example.net')).toBe(false);
    expect((await getDomain(db.knex, projectId, lost.id))!.records).toMatchObject({ DKIM: 'FAILED' });

    // The run scheduled its successor: the next whole hour, as a delayed workflow of its own.
    const next = nextCheckSlot(Date.now(), 3_600_000);
    const nextId = workflowId.checkDomains({ slot: next });
    for (;;) {
      const row = await db.knex('dbos.workflow_status').where({ workflow_uuid: nextId }).first('status');
      if (row) {
        expect(['DELAYED', 'ENQUEUED']).toContain(row.status);
        break;
      }
      if (Date.now() > deadline) throw new Error(`no run ${nextId} was scheduled`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // The run's own status is written after its last step (the one that scheduled the successor): wait for it.
    for (;;) {
      const first = await db.knex('dbos.workflow_status').where({ workflow_uuid: workflowId.checkDomains({ slot }) }).first('status');
      if (first.status !== 'PENDING' || Date.now() > deadline) {
        expect(first.status).toBe('SUCCESS');
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});
