import { useLocation } from 'preact-iso';
import type { ExecutionStatus } from '../../../automations/steps';
import { api, call } from '../../api';
import { Button, EmptyState, Icon, Loading, Pager, SelectField, Time, useCursorPages } from '../../components';
import { useLoad, useRecheck } from '../../hooks';
import { EXECUTION_STATUS_WORDS, ExecutionStatusBadge, stepsOf, type Workflow } from '../parts/automations';
import { STEP_INFO } from '../parts/automationSteps';

/**
 * An automation's executions (GET /workflows/:id/executions): one per contact's journey, newest first, with the step
 * each is on or ended at; filtered by status (kept in the URL: ?status=WAITING), a cursor page at a time. A row leads
 * to the execution's page (its path on the graph, its trace, cancel).
 */
const PAGE_SIZE = 50;
const STATUSES: [string, string][] = [['', 'Any status'], ...EXECUTION_STATUS_WORDS];

export function Executions({ workflow }: { workflow: Workflow }) {
  const { query, route } = useLocation();
  const status = (query.status ?? '') as ExecutionStatus | '';
  const pages = useCursorPages(status);
  const list = useLoad(() => call(api.GET('/workflows/{id}/executions', {
    params: { path: { id: workflow.id }, query: { limit: PAGE_SIZE, ...(status ? { status } : {}), ...(pages.cursor ? { cursor: pages.cursor } : {}) } },
  })), [workflow.id, status, pages.cursor]);
  const items = list.data?.items ?? [];
  // A RUNNING execution is between two steps for a moment: the page looks again until none is (a WAITING one may
  // wait for days; Refresh is there for those).
  const moving = items.some((x) => x.status === 'RUNNING');
  useRecheck(list.reload, { waiting: moving, busy: list.loading, seen: list.data, maxMs: 1500 });
  const steps = new Map(stepsOf(workflow).map((s) => [s.id, s]));
  const stepName = (id: string | null) => {
    if (!id) return <span class="muted">Not started</span>;
    const s = steps.get(id);
    return <><span class="mono small nowrap">{id}</span>{s ? <span class="sub nowrap">{STEP_INFO[s.type].label}</span> : null}</>;
  };

  return (
    <div class="stack">
      <div class="toolbar executions-filters">
        <SelectField label="Status" value={status} options={STATUSES} onValue={(v) => route(`/app/automations/${workflow.id}/executions${v ? `?status=${v}` : ''}`)} />
        <Button variant="ghost" onClick={list.reload} aria-label="Refresh executions"><Icon name="refresh" />Refresh</Button>
      </div>
      {list.loading && !list.data ? <Loading what="Loading executions" /> : null}
      {list.error && !list.data ? <EmptyState icon="alert" title="The executions did not load" actions={<Button onClick={list.reload}>Try again</Button>}>{list.error.message}</EmptyState> : null}
      {list.data && !items.length ? (
        status ? (
          <EmptyState icon="search" title={`No ${STATUSES.find(([s]) => s === status)?.[1].toLowerCase() ?? ''} executions`} actions={<Button onClick={() => route(`/app/automations/${workflow.id}/executions`)}>Show every status</Button>} />
        ) : (
          <EmptyState icon="automations" title="No executions yet"
            code={`curl ${location.origin}/v1/track \\\n  -H "Authorization: Bearer $HERALD_PUBLIC_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '{"email": "ada@example.org", "event": "${workflow.trigger.event}"}'`}>
            {workflow.enabled
              ? `Each time “${workflow.trigger.event}” is tracked for a contact, their journey starts and shows up here.`
              : 'The automation is disabled: enable it, and each time its event is tracked for a contact, their journey shows up here.'}
          </EmptyState>
        )
      ) : null}
      {items.length ? (
        <>
          <div class="table-wrap" aria-busy={list.loading ? 'true' : undefined}>
            <table class="table executions-table">
              <caption class="visually-hidden">Executions of {workflow.name}, newest first</caption>
              <thead><tr>
                <th scope="col">Contact</th><th scope="col">Status</th><th scope="col" class="hide-phone">Step</th>
                <th scope="col" class="hide-phone">Started</th><th scope="col" class="hide-phone">Updated</th>
              </tr></thead>
              <tbody>
                {items.map((x) => (
                  <tr key={x.id}>
                    <td class="truncate fill">
                      <a class="row-link" href={`/app/automations/${workflow.id}/executions/${x.id}`}>{x.contactEmail}</a>
                      <span class="sub show-phone">{x.currentStepId ?? 'Not started'} · <Time value={x.startedAt} relative /></span>
                    </td>
                    <td><ExecutionStatusBadge status={x.status} /></td>
                    <td class="hide-phone">{stepName(x.currentStepId)}</td>
                    <td class="hide-phone"><Time value={x.startedAt} /></td>
                    <td class="hide-phone"><Time value={x.updatedAt} relative /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager pages={pages} shown={items.length} nextCursor={list.data?.nextCursor} noun="Executions" pageSize={PAGE_SIZE} />
        </>
      ) : null}
    </div>
  );
}
