import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiFailure, call, type Schemas } from '../api';
import { Button, EmailStatus, EmptyState, Icon, Loading, Page, SearchField, SelectField, TextField, Time, totalText } from '../components';
import { useLoad } from '../hooks';
import { useSession } from '../session';

/**
 * The email log: GET /emails with its filters (status, recipient, campaign, dates) kept in the URL query, paged by the
 * API's cursor (keyset: as fast on the millionth email as on the first). Each row leads to the email's page.
 */
type Email = Schemas['Email'];
type Status = Email['status'];

const STATUSES: [string, string][] = [['', 'Any status'], ['QUEUED', 'Queued'], ['SENDING', 'Sending'], ['SENT', 'Sent'], ['FAILED', 'Failed'],
  ['BOUNCED', 'Bounced'], ['SUPPRESSED', 'Suppressed'], ['CANCELLED', 'Cancelled']];
const PAGE_SIZE = 50;
const FILTERS = ['status', 'to', 'campaignId', 'since', 'until'] as const;
type Filters = Record<(typeof FILTERS)[number], string>;

/** Where "Previous" goes from a page: the cursor of the page before it, remembered as the person pages forward. */
const previousOf = new Map<string, string>();

/** A day of the date inputs (yyyy-mm-dd) as the instant its day starts in the viewer's zone. */
const startOfDay = (day: string, plusDays = 0): string | undefined => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  const [y, m, d] = day.split('-').map(Number) as [number, number, number];
  return new Date(y, m - 1, d + plusDays).toISOString();
};

function toQuery(filters: Partial<Filters>, cursor?: string): string {
  const q = new URLSearchParams();
  for (const key of FILTERS) if (filters[key]) q.set(key, filters[key]!.trim());
  if (cursor) q.set('cursor', cursor);
  const s = q.toString();
  return s ? `/app/emails?${s}` : '/app/emails';
}

function firstSendCurl(): string {
  return [
    `curl -X POST ${location.origin}/v1/send \\`,
    '  -H "Authorization: Bearer sk_…" -H "Content-Type: application/json" \\',
    `  -d '{"to":"ada@example.org","from":"hello@your-domain.com","subject":"Hello","body":"<p>It works</p>"}'`,
  ].join('\n');
}

export default function Emails() {
  const { query, route } = useLocation();
  const { can } = useSession();
  const applied: Filters = { status: query.status ?? '', to: query.to ?? '', campaignId: query.campaignId ?? '', since: query.since ?? '', until: query.until ?? '' };
  const cursor = query.cursor || undefined;
  const [form, setForm] = useState<Filters>(applied);
  const set = (key: keyof Filters) => (value: string) => setForm((f) => ({ ...f, [key]: value }));
  const filtered = FILTERS.some((k) => applied[k]);

  const page = useLoad(() => call(api.GET('/emails', {
    params: {
      query: {
        limit: PAGE_SIZE, cursor,
        status: (applied.status || undefined) as Status | undefined,
        to: applied.to || undefined,
        campaignId: applied.campaignId || undefined,
        since: applied.since ? startOfDay(applied.since) : undefined,
        // The "To" day is included: the API's `until` is exclusive, so the day after it starts.
        until: applied.until ? startOfDay(applied.until, 1) : undefined,
      },
    },
  }), { expect: [400, 422] }), [FILTERS.map((k) => applied[k]).join('\u0000'), cursor]);

  const fields = page.error instanceof ApiFailure ? page.error.fields : {};
  const search = (e: Event) => {
    e.preventDefault();
    route(toQuery(form));
  };
  const clear = () => {
    setForm({ status: '', to: '', campaignId: '', since: '', until: '' });
    route('/app/emails');
  };
  const next = (nextCursor: string) => {
    previousOf.set(nextCursor, cursor ?? '');
    route(toQuery(applied, nextCursor));
  };
  const previous = () => route(toQuery(applied, cursor ? previousOf.get(cursor) || undefined : undefined));

  return (
    <Page title="Emails" lede="Every message of this project, newest first: find one by its recipient, status, campaign or date.">
      <form class="toolbar emails-filters" onSubmit={search} role="search" aria-label="Filter emails">
        <div class="field grow">
          <span class="field-label" aria-hidden="true">Recipient</span>
          <SearchField label="Recipient" type="search" inputMode="email" value={form.to} onValue={set('to')} aria-invalid={fields.to ? 'true' : undefined}
            aria-describedby={fields.to ? 'to-error' : undefined} autocomplete="off" spellcheck={false} />
          {fields.to ? <div class="field-error" id="to-error"><Icon name="alert" size={14} /><span>{fields.to}</span></div> : null}
        </div>
        <SelectField label="Status" value={form.status} onValue={set('status')} options={STATUSES} error={fields.status} />
        <TextField label="Campaign ID" value={form.campaignId} onValue={set('campaignId')} error={fields.campaignId} placeholder="Any campaign" spellcheck={false} />
        <TextField label="From" type="date" value={form.since} onValue={set('since')} error={fields.since} />
        <TextField label="To" type="date" value={form.until} onValue={set('until')} error={fields.until} />
        <Button type="submit" variant="primary">Apply</Button>
        {filtered ? <Button variant="ghost" onClick={clear}>Clear</Button> : null}
      </form>

      {page.loading && !page.data ? <Loading what="Loading emails" /> : null}
      {page.error && !(page.error instanceof ApiFailure && Object.keys(fields).length) ? (
        <EmptyState icon="alert" title="The emails could not be loaded" actions={<Button onClick={page.reload}>Try again</Button>}>{page.error.message}</EmptyState>
      ) : null}
      {page.data && !page.error ? (
        page.data.items.length === 0 ? (
          filtered || cursor ? (
            <EmptyState icon="search" title="No email matches these filters" actions={<Button onClick={clear}>Clear filters</Button>}>
              The recipient must be the whole address. Dates are days in your time zone; both are included.
            </EmptyState>
          ) : (
            can('send') ? (
              <EmptyState icon="emails" title="No email sent yet" code={firstSendCurl()}>
                Send the first one with a secret key of this project (and a verified sending domain): it appears here at once, with every step of its delivery.
              </EmptyState>
            ) : (
              <EmptyState icon="emails" title="No email sent yet">
                When the project sends its first email it appears here, with every step of its delivery.
              </EmptyState>
            )
          )
        ) : (
          <EmailTable items={page.data.items} busy={page.loading} />
        )
      ) : null}

      {page.data && !page.error && page.data.items.length > 0 ? (
        <nav class="pager" aria-label="Pages of emails">
          <span class="num">
            {page.data.items.length} shown · {totalText(page.data)} in all
          </span>
          <span class="pager-buttons">
            <Button size="sm" onClick={previous} disabled={!cursor}><Icon name="arrowLeft" />{cursor && !previousOf.has(cursor) ? 'Newest' : 'Previous'}</Button>
            <Button size="sm" onClick={() => page.data?.nextCursor && next(page.data.nextCursor)} disabled={!page.data.hasMore || !page.data.nextCursor}>Next<Icon name="arrowRight" /></Button>
          </span>
        </nav>
      ) : null}
    </Page>
  );
}

function EmailTable({ items, busy }: { items: Email[]; busy: boolean }) {
  return (
    <div class="table-wrap" aria-busy={busy ? 'true' : undefined}>
      <table class="table">
        <caption class="visually-hidden">Emails, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Recipient</th>
            <th scope="col" class="hide-sm">Subject</th>
            <th scope="col">Status</th>
            <th scope="col" class="num hide-sm">Opens</th>
            <th scope="col" class="num hide-sm">Clicks</th>
            <th scope="col" class="hide-sm">Queued</th>
          </tr>
        </thead>
        <tbody>
          {items.map((e) => (
            <tr key={e.id}>
              <td class="truncate">
                <a class="row-link" href={`/app/emails/${e.id}`}>{e.to}</a>
                {e.isTest ? <span class="sub">Test copy</span> : null}
                <span class="sub show-sm truncate">{e.subject ?? 'Campaign email'} · <Time value={e.createdAt} relative /></span>
              </td>
              <td class="truncate hide-sm">{e.subject ?? <span class="muted">Campaign email</span>}</td>
              <td><EmailStatus status={e.status} /></td>
              <td class="num hide-sm">{e.tracking.opens ? e.opens : <span class="muted" title="Open tracking off">—</span>}</td>
              <td class="num hide-sm">{e.tracking.clicks ? e.clicks : <span class="muted" title="Click tracking off">—</span>}</td>
              <td class="hide-sm"><Time value={e.createdAt} /></td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
