import fs from 'node:fs';
import { withChromium } from '../support/chromium';
import { checkA11y, heading, screenshot, startConsole, VIEWPORTS, type ConsoleHarness } from '../support/console';

/**
 * Contacts → Import in Chromium against a real Herald (the embedded engine runs the import): a member chooses a CSV with
 * bad rows, checks the proposed column map and changes it (a column ignored, a data key renamed, a type), picks the
 * options (a static segment), starts the import, follows it to its result and downloads the refused rows with their
 * lines and reasons; the imported contacts are in the list and in the segment. An admin alone is offered resubscribe,
 * with its warning; a viewer is offered no import.
 */
withChromium('the console: contact import', (chromium) => {
  let c: ConsoleHarness;
  let segmentId: string;
  beforeAll(async () => {
    c = await startConsole(chromium, { delivery: true });
    const res = await fetch(c.url('/segments'), { method: 'POST', headers: { ...c.key, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Imported leads', type: 'STATIC' }) });
    segmentId = ((await res.json()) as { data: { id: string } }).data.id;
  }, 90_000);
  afterAll(async () => { await c?.close(); });

  const get = async (path: string) => ((await (await fetch(c.url(path), { headers: c.key })).json()) as { data: Record<string, unknown> }).data;

  /**
   * 4 good rows and 4 bad ones: an invalid address (line 4), a number that is not one (line 6), a broken quote (line 7,
   * which the preview shows already), a duplicate (line 9).
   */
  const file = (size: string) => Buffer.from([
    'Email,First name,Company,Seats',
    `ada.${size}@example.org,Ada,Analytical,3`,
    `grace.${size}@example.org,Grace,Navy,5`,
    'not-an-address,Nobody,None,1',
    `alan.${size}@example.org,Alan,Bletchley,2`,
    `edsger.${size}@example.org,Edsger,Eindhoven,many`,
    `lin.${size}@example.org,"Lin"da,Quotes,1`,
    `barbara.${size}@example.org,Barbara,MIT,`,
    `ADA.${size}@example.org,Ada again,Analytical,4`,
  ].join('\r\n') + '\r\n');

  describe.each(VIEWPORTS)('at %s size', (size, viewport) => {
    test('a member imports a CSV with bad rows: map checked and changed, options, progress, result, refused rows downloaded', async () => {
      await c.withPage({ viewport, as: 'member' }, async (page) => {
        await page.goto(c.url('/app/contacts'));
        await heading(page, 'Contacts');
        await page.getByRole('button', { name: 'Import', exact: true }).click();
        const dialog = page.getByRole('dialog', { name: 'Import contacts' });
        await dialog.getByText('Choose a CSV or JSON Lines file').waitFor();
        await checkA11y(page, 'the Import dialog: choose a file');
        await screenshot(page, 'contacts-import-file');

        await dialog.locator('input[type=file]').setInputFiles({ name: `leads-${size}.csv`, mimeType: 'text/csv', buffer: file(size) });
        const columns = page.getByRole('dialog', { name: 'Import contacts: columns' });
        await columns.getByText('CSV, comma separated').waitFor();
        // The proposed map: Email by its name, the others data keys of the type their first values have.
        const column = (name: string) => columns.getByRole('group', { name, exact: true });
        expect(await column('Email').getByLabel('Import as').inputValue()).toBe('email');
        expect(await column('Company').getByLabel('Import as').inputValue()).toBe('data');
        expect(await column('Company').getByLabel('Type').inputValue()).toBe('string');
        // The preview names the rows it cannot read.
        await columns.getByText('Line 7: broken quote').waitFor();
        // Changed: First name ignored, Company stored as "company", Seats a number.
        await column('First name').getByLabel('Import as').selectOption('ignore');
        await column('Company').getByLabel('Data key').fill('company');
        await column('Seats').getByLabel('Type').selectOption('number');
        await checkA11y(page, 'the Import dialog: columns');
        await screenshot(page, 'contacts-import-columns', { fullPage: size === 'phone' });
        // The keyboard: Enter in a field goes on to the options.
        await column('Company').getByLabel('Data key').press('Enter');

        const options = page.getByRole('dialog', { name: 'Import contacts: options' });
        await options.getByLabel('Contacts', { exact: true }).waitFor();
        await options.getByLabel('Add to a static segment').selectOption({ label: 'Imported leads' });
        // Resubscribe is an admin's: a member is not offered it.
        expect(await options.getByText('Let the file resubscribe contacts').count()).toBe(0);
        await checkA11y(page, 'the Import dialog: options');
        await screenshot(page, 'contacts-import-options');
        await options.getByRole('button', { name: 'Start import' }).click();

        // The import's own view: queued, then followed by polling until it ends.
        const running = page.getByRole('dialog', { name: 'Importing contacts' });
        await running.getByRole('progressbar', { name: 'Import progress' }).waitFor();
        await running.getByRole('button', { name: 'Cancel import' }).waitFor();
        await screenshot(page, 'contacts-import-progress');

        const result = page.getByRole('dialog', { name: 'Import finished' });
        await result.waitFor({ timeout: 30_000 });
        await result.getByText('Completed').waitFor();
        const stat = async (label: string) => (await result.locator('.stat').filter({ hasText: label }).locator('dd').innerText()).trim();
        expect({ created: await stat('Created'), refused: await stat('Refused') }).toEqual({ created: '4', refused: '4' });
        await checkA11y(page, 'the Import dialog: result');
        await screenshot(page, 'contacts-import-result');

        const [download] = await Promise.all([page.waitForEvent('download'), result.getByRole('button', { name: 'Download refused rows (CSV)' }).click()]);
        const errors = fs.readFileSync((await download.path())!, 'utf8').trim().split(/\r\n/);
        expect(errors[0]).toBe('line,reason,raw');
        expect(errors.slice(1).map((l) => l.split(',')[0])).toEqual(['4', '6', '7', '9']);
        expect(errors[2]).toMatch(/Seats"+ is not a number/);
        expect(errors[3]).toContain('broken quote');
        expect(errors[4]).toContain('duplicate email: the file has it on line 2 already');

        await result.getByRole('button', { name: 'Done' }).click();
        await page.getByRole('link', { name: `grace.${size}@example.org` }).waitFor();

        // What was stored: the map and the options as chosen.
        const found = await get(`/contacts?search=${encodeURIComponent(`ada.${size}@`)}`) as unknown as { items: { id: string; data: Record<string, unknown> }[] };
        expect(found.items[0]!.data).toEqual({ company: 'Analytical', Seats: 3 });
        const members = await get(`/segments/${segmentId}/contacts?limit=100`) as unknown as { items: { email: string }[] };
        expect(members.items.map((m) => m.email)).toEqual(expect.arrayContaining([`ada.${size}@example.org`, `barbara.${size}@example.org`]));

        // The import is listed among the recent ones and opens on its result.
        await page.getByRole('button', { name: 'Import', exact: true }).click();
        await dialog.getByRole('button', { name: new RegExp(`leads-${size}\\.csv`) }).click();
        await page.getByRole('dialog', { name: 'Import finished' }).getByText('8 rows read').waitFor();
      });
    });

    test('an admin is offered resubscribe, with its warning; a viewer no import at all', async () => {
      await c.withPage({ viewport, as: 'admin' }, async (page) => {
        await page.goto(c.url('/app/contacts'));
        await heading(page, 'Contacts');
        await page.getByRole('button', { name: 'Import', exact: true }).click();
        await page.getByRole('dialog', { name: 'Import contacts' }).locator('input[type=file]')
          .setInputFiles({ name: 'more.csv', mimeType: 'text/csv', buffer: Buffer.from(`email,plan\nrené.${size}@example.org,pro\n`) });
        await page.getByRole('dialog', { name: 'Import contacts: columns' }).getByRole('button', { name: 'Next: options' }).click();
        const options = page.getByRole('dialog', { name: 'Import contacts: options' });
        await options.getByLabel('Let the file resubscribe contacts').check();
        await options.getByRole('alert').filter({ hasText: 'Only with their consent' }).waitFor();
        await checkA11y(page, 'the Import dialog: resubscribe');
        await screenshot(page, 'contacts-import-resubscribe');
        await options.getByRole('button', { name: 'Back' }).click();
        await page.getByRole('dialog', { name: 'Import contacts: columns' }).waitFor();
      });
      await c.withPage({ viewport, as: 'viewer' }, async (page) => {
        await page.goto(c.url('/app/contacts'));
        await heading(page, 'Contacts');
        await page.getByRole('link', { name: `grace.${size}@example.org` }).waitFor();
        expect(await page.getByRole('button', { name: 'Import', exact: true }).count()).toBe(0);
      });
    });
  });
});
