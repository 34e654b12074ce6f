import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, call, type Schemas } from '../../api';
import { Badge, Button, EmptyState, Loading, SelectField, TextField, Time, totalText } from '../../components';
import { useLoad } from '../../hooks';

type Entry = Schemas['AuditEntry'];

/** The operations the audit log records (audit/log.ts callers), in words; another shows as its operationId. */
const ACTIONS: Record<string, string> = {
  createKey: 'Created an API key', 'key.create': 'Created an API key (CLI)', revokeKey: 'Revoked an API key', 'key.revoke': 'Revoked an API key (CLI)',
  updateMember: "Changed a member's role", deleteMember: 'Removed a member', createInvitation: 'Invited someone', deleteInvitation: 'Revoked an invitation',
  updateSettings: 'Changed the settings',
  createDomain: 'Added a domain', verifyDomain: 'Verified a domain', deleteDomain: 'Deleted a domain',
  createWebhook: 'Created a webhook', updateWebhook: 'Changed a webhook', rotateWebhookSecret: "Rotated a webhook's secret", deleteWebhook: 'Deleted a webhook',
  createSuppression: 'Suppressed an address', deleteSuppression: 'Removed a suppression',
  deleteContact: 'Deleted a contact', deleteTemplate: 'Deleted a template', deleteSegment: 'Deleted a segment', removeSegmentMembers: 'Removed contacts from a segment',
  sendCampaign: 'Sent a campaign', cancelCampaign: 'Cancelled a campaign', deleteCampaign: 'Deleted a campaign', deleteWorkflow: 'Deleted an automation',
  cancelWorkflowExecution: "Cancelled a contact's automation journey",
};
const RESOURCES = ['key', 'member', 'invitation', 'settings', 'domain', 'webhook', 'suppression', 'contact', 'template', 'segment', 'campaign', 'workflow', 'execution'];
const LIMIT = 50;

/** A day of a date input (YYYY-MM-DD) as the instant its local midnight is: the viewer's day, not UTC's. */
function localMidnight(day: string, plusDays = 0): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  return m ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + plusDays).toISOString() : undefined;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** What an entry did, in a sentence, with its details where they say more (a role, a name, an address). */
function describe(e: Entry, names: Map<string, string>): string {
  const d = e.details as Record<string, unknown>;
  const target = e.resourceId ? names.get(e.resourceId) : undefined;
  switch (e.operation) {
    case 'createKey': case 'key.create': return `Created the API key “${str(d.name)}” (${str(d.scope) === 'sending' ? 'sending only' : str(d.scope) || 'full'})`;
    case 'revokeKey': case 'key.revoke': return `Revoked the API key${d.name || target ? ` “${str(d.name) || target}”` : ''}`;
    case 'updateMember': return `Changed the role of ${target ?? 'a member'} to ${str(d.role)}${d.was ? ` (was ${str(d.was)})` : ''}`;
    case 'deleteMember': return `Removed ${target ?? 'a member'} (${str(d.role)})`;
    case 'createInvitation': return `Invited ${str(d.email)} as ${str(d.role)}`;
    case 'deleteInvitation': return `Revoked the invitation of ${str(d.email)}`;
    default: return ACTIONS[e.operation] ?? e.operation;
  }
}

/** The audit log (GET /audit-log): filters in the URL, cursor pages, who did what to which id, when, from where. */
export function AuditLog() {
  const { query, path, route } = useLocation();
  const [back, setBack] = useState<string[]>([]);
  const filters = { actor: query.actor ?? '', operation: query.operation ?? '', resourceType: query.resourceType ?? '', since: query.since ?? '', until: query.until ?? '' };
  const [resourceId, setResourceId] = useState(query.resourceId ?? '');

  const go = (next: Record<string, string | undefined>, keepStack = false) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries({ ...filters, resourceId: query.resourceId, cursor: undefined, ...next })) if (v) q.set(k, v);
    if (!keepStack) setBack([]);
    route(`${path}${q.size ? `?${q}` : ''}`);
  };

  // Who the ids are: the members and the live keys (an id no longer among them is a former member or a revoked key).
  const people = useLoad(() => Promise.all([
    call(api.GET('/members')).then((p) => p.items),
    call(api.GET('/keys', { params: { query: { limit: 100 } } })).then((p) => p.items),
  ]), []);
  const names = new Map<string, string>();
  const kinds = new Map<string, 'person' | 'key'>();
  for (const m of people.data?.[0] ?? []) { names.set(m.userId, m.name || m.email); kinds.set(m.userId, 'person'); }
  for (const k of people.data?.[1] ?? []) { names.set(k.id, k.name); kinds.set(k.id, 'key'); }

  const page = useLoad(() => call(api.GET('/audit-log', { params: { query: {
    limit: LIMIT,
    ...(query.cursor ? { cursor: query.cursor } : {}),
    ...(filters.actor ? { actor: filters.actor } : {}),
    ...(filters.operation ? { operation: filters.operation } : {}),
    ...(filters.resourceType ? { resourceType: filters.resourceType } : {}),
    ...(query.resourceId ? { resourceId: query.resourceId } : {}),
    ...(localMidnight(filters.since) ? { since: localMidnight(filters.since) } : {}),
    ...(localMidnight(filters.until, 1) ? { until: localMidnight(filters.until, 1) } : {}),
  } } })), [query.cursor, filters.actor, filters.operation, filters.resourceType, query.resourceId, filters.since, filters.until]);

  const filtered = Object.values(filters).some(Boolean) || Boolean(query.resourceId);
  const actorOptions: [string, string][] = [['', 'Anyone'],
    ...(people.data?.[0] ?? []).map((m): [string, string] => [m.userId, m.name || m.email]),
    ...(people.data?.[1] ?? []).map((k): [string, string] => [k.id, `Key: ${k.name}`])];
  if (filters.actor && !names.has(filters.actor)) actorOptions.push([filters.actor, filters.actor]);

  const entries = page.data?.items ?? [];
  return (
    <div class="stack">
      <div class="toolbar audit-filters" role="search" aria-label="Filter the audit log">
        <SelectField label="Who" value={filters.actor} onValue={(v) => go({ actor: v })} options={actorOptions} />
        <SelectField label="Action" value={filters.operation} onValue={(v) => go({ operation: v })}
          options={[['', 'Any action'], ...Object.entries(ACTIONS)]} />
        <SelectField label="Resource" value={filters.resourceType} onValue={(v) => go({ resourceType: v })}
          options={[['', 'Any resource'], ...RESOURCES.map((r): [string, string] => [r, r])]} />
        <form class="audit-resource-id" onSubmit={(e) => { e.preventDefault(); go({ resourceId: resourceId.trim() }); }}>
          <TextField label="Resource id" value={resourceId} onValue={setResourceId} placeholder="An id, then Enter" />
        </form>
        <TextField label="From" type="date" value={filters.since} onValue={(v) => go({ since: v })} />
        <TextField label="To" type="date" value={filters.until} onValue={(v) => go({ until: v })} />
        {filtered ? <Button variant="ghost" onClick={() => { setResourceId(''); go({ actor: '', operation: '', resourceType: '', since: '', until: '', resourceId: '' }); }}>Clear filters</Button> : null}
      </div>

      {page.loading && !page.data ? <Loading what="Loading the audit log" /> : page.error ? (
        <EmptyState icon="alert" title="The audit log did not load" actions={<Button onClick={page.reload}>Try again</Button>}>{page.error.message}</EmptyState>
      ) : entries.length === 0 ? (
        filtered
          ? <EmptyState icon="search" title="No entry matches these filters">Widen the dates or clear a filter.</EmptyState>
          : <EmptyState icon="clock" title="Nothing has been changed yet">Creating or revoking a key, inviting someone, changing a role or a setting, deleting anything: each is written here with who did it, when and from where.</EmptyState>
      ) : (
        <>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Audit log entries" aria-busy={page.loading ? 'true' : undefined}>
            <table class="table audit-table">
              <thead><tr><th>When</th><th>Who</th><th>What</th><th>Resource</th><th>From</th></tr></thead>
              <tbody>
                {entries.map((e) => {
                  const actor = e.actor.id ? names.get(e.actor.id) : undefined;
                  return (
                    <tr key={e.id}>
                      <td><Time value={e.at} /></td>
                      <td>
                        {e.actor.kind === 'operator' ? <span class="strong">The operator (CLI)</span>
                          : <span class="strong">{actor ?? (e.actor.kind === 'key' ? 'A revoked key' : 'A former member')}</span>}
                        <span class="sub">{e.actor.kind === 'key' ? 'API key' : e.actor.kind === 'user' ? 'Person' : 'Command line'}</span>
                      </td>
                      <td class="audit-what">{describe(e, names)}<span class="sub mono">{e.operation}</span></td>
                      <td>
                        <Badge>{e.resourceType}</Badge>
                        {e.resourceId ? <span class="sub mono truncate" title={e.resourceId}>{e.resourceId}</span> : null}
                      </td>
                      <td class="mono nowrap">{e.address ?? <span class="muted">—</span>}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          <div class="pager">
            <span>{page.data?.total !== undefined ? totalText(page.data, 'entry', 'entries') : ''}</span>
            <div class="pager-buttons">
              <Button size="sm" disabled={!query.cursor} onClick={() => {
                const previous = back.slice(0, -1);
                const cursor = back[back.length - 1];
                setBack(previous);
                go({ cursor }, true);
              }}>Newer</Button>
              <Button size="sm" disabled={!page.data?.nextCursor} onClick={() => {
                setBack([...back, query.cursor ?? '']);
                go({ cursor: page.data!.nextCursor! }, true);
              }}>Older</Button>
            </div>
          </div>
        </>
      )}
    </div>
  );
}
