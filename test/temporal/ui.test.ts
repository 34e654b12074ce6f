import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, withChromium } from '../support/chromium';
import { bearer } from '../support/app';
import { waitFor } from '../support/processes';
import { heraldCluster } from '../support/temporalCluster';
import { describeTemporal } from '../support/temporal';

/**
 * What an operator sees in Temporal UI (the dev server's, 2.42.1) in headless Chromium (Debian's, driven by
 * playwright-core): a scheduled campaign's workflow found by Herald's search attribute, its page with the summary Herald
 * gave it, and its end after a cancel through Herald's API. Screenshots go to artifacts/ (CI lists them).
 */
const ARTIFACTS = path.resolve(__dirname, '..', '..', 'artifacts');

withChromium('the Temporal UI test', (chromiumPath) => {
  describeTemporal(__filename, 'Temporal UI in headless Chromium', (temporal) => {
    const c = heraldCluster(temporal, { workers: 1 });
    let browser: Browser | undefined;
    let page: Page | undefined;

    beforeAll(async () => {
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      // This run's screenshots only (a failure screenshot of an earlier run would mislead).
      for (const f of fs.readdirSync(ARTIFACTS)) if (f.startsWith('temporal-ui-')) fs.rmSync(path.join(ARTIFACTS, f));
      browser = await launchChromium(chromiumPath);
    }, 30_000);
    afterAll(async () => { await browser?.close(); });

    const screenshot = (name: string) => page!.screenshot({ path: path.join(ARTIFACTS, name) });

    test('a campaign scheduled for later: found by HeraldCampaignId, its summary on its page, Canceled after an API cancel', async () => {
      expect(temporal.uiUrl).toBeDefined();
      const key = bearer(c.project.secretKey);
      for (const email of ['ui-1@example.org', 'ui-2@example.org']) {
        expect((await c.http().post('/contacts').set(key).send({ email })).status).toBe(201);
      }
      const name = 'UI spring sale';
      const created = await c.http().post('/campaigns').set(key)
        .send({ name, subject: 'Sale', body: '<p>Hello</p>', from: 'news@example.com', audienceType: 'ALL' });
      expect(created.status).toBe(201);
      const id = created.body.data.id as string;
      // An hour ahead: the workflow is a delayed start, Running in Temporal until then.
      const sent = await c.http().post(`/campaigns/${id}/send`).set(key).send({ scheduledAt: new Date(Date.now() + 3600_000).toISOString() });
      expect(sent.status).toBe(200);
      expect(sent.body.data.status).toBe('SCHEDULED');

      const workflowId = `campaign-${id}`;
      const summary = `Campaign "${name}" · project "${c.project.name}" · 2 recipient(s)`;
      const handle = c.client.workflow.getHandle(workflowId);
      const description = await waitFor('the workflow', () => handle.describe().catch(() => undefined), 20_000, 200);
      expect(description.status.name).toBe('RUNNING');
      expect(await description.staticSummary()).toBe(summary);
      const { runId } = description;
      // Visibility is eventually consistent: wait until the server's list query finds it, as the UI's page asks the same.
      const query = `HeraldCampaignId="${id}"`;
      await waitFor('the workflow in visibility', async () => {
        for await (const w of c.client.workflow.list({ query })) return w;
        return undefined;
      }, 20_000, 200);

      page = await browser!.newPage({ viewport: { width: 1920, height: 1080 } });
      try {
        const base = `${temporal.uiUrl}/namespaces/${temporal.namespace}`;
        const listUrl = `${base}/workflows?query=${encodeURIComponent(query)}`;

        // 1. The list, filtered by Herald's search attribute: one row, this workflow, Running, of type sendCampaign.
        await page.goto(listUrl);
        const row = page.locator('tbody tr', { hasText: workflowId });
        await row.waitFor({ timeout: 20_000 });
        expect(await page.locator('tbody tr').count()).toBe(1);
        const rowText = await row.innerText();
        expect(rowText).toContain('Running');
        expect(rowText).toContain(runId);
        expect(rowText).toContain('sendCampaign');
        await page.getByText('1 Workflow', { exact: true }).waitFor({ timeout: 5_000 });
        await screenshot('temporal-ui-list.png');

        // 2. Its page, reached from the row: the header, and the summary in the first event's details.
        await row.getByRole('link', { name: workflowId }).click();
        await page.waitForURL(`**/workflows/${workflowId}/${runId}/history`, { timeout: 10_000 });
        await page.getByRole('heading', { name: workflowId }).waitFor({ timeout: 20_000 });
        await page.getByText('Workflow Execution Started').first().waitFor({ timeout: 10_000 });
        await page.getByText(summary, { exact: true }).waitFor({ timeout: 10_000 });
        // Its User Metadata tab: "Summary", rendered as markdown in a sandboxed frame (with typographic quotes).
        await page.getByRole('tab', { name: 'User Metadata' }).click();
        await page.waitForURL(`**/workflows/${workflowId}/${runId}/user-metadata`, { timeout: 10_000 });
        await page.getByText('Summary', { exact: true }).waitFor({ timeout: 10_000 });
        const rendered = page.locator('iframe[title="output"]').first().contentFrame();
        await rendered.getByText(new RegExp(`^Campaign .${name}. · project .${c.project.name}. · 2 recipient\\(s\\)$`)).waitFor({ timeout: 10_000 });
        await screenshot('temporal-ui-workflow.png');

        // 3. A cancel through Herald's API: the engine cancel wakes the delayed workflow, which ends Canceled.
        const cancelled = await c.http().post(`/campaigns/${id}/cancel`).set(key);
        expect(cancelled.status).toBe(200);
        expect(cancelled.body.data.status).toBe('CANCELLED');
        const closed = await waitFor('the workflow closed', async () => {
          const d = await handle.describe();
          return d.status.name === 'RUNNING' ? undefined : d;
        }, 30_000, 200);
        expect(closed.status.name).toBe('CANCELLED');
        await page.goto(`${base}/workflows/${workflowId}/${runId}/history`);
        await page.getByRole('heading', { name: workflowId }).waitFor({ timeout: 20_000 });
        await page.getByText('Workflow Execution Canceled').first().waitFor({ timeout: 10_000 });
        await page.getByText('Canceled', { exact: true }).first().waitFor({ timeout: 5_000 });
        await page.getByText('cancelCampaign').first().waitFor({ timeout: 5_000 });
        await screenshot('temporal-ui-cancelled.png');
        // The list reads visibility, which follows the workflow's state a moment later.
        await waitFor('the cancel in visibility', async () => {
          for await (const w of c.client.workflow.list({ query: `${query} AND ExecutionStatus="Canceled"` })) return w;
          return undefined;
        }, 20_000, 200);
        await page.goto(listUrl);
        await row.waitFor({ timeout: 20_000 });
        expect(await row.innerText()).toContain('Canceled');
      } catch (err) {
        await screenshot('temporal-ui-failure.png').catch(() => undefined);
        throw err;
      }
    }, 90_000);
  });
});
