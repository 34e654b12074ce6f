import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The process's own series (GET /metrics): counters incremented where the business stores or decides things (one
 * line each), the HTTP histogram (observed by api/middleware/httpMetrics.ts), and prom-client's default process
 * metrics. They live once per process, whatever serves them: the API port, or METRICS_PORT on an API or a worker.
 * The gauges that read the database are made per database (metrics/database.ts) and joined to these when served
 * (metrics/metrics.ts).
 *
 * Names follow Prometheus's conventions: `herald_` prefix, base units in the name (`_seconds`), `_total` on counters.
 * The default process metrics keep their standard names (`process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`,
 * …) so that the usual Node.js dashboards read them; the scrape's `job` and `instance` labels tell Herald's apart.
 */
export const processRegistry = new Registry();

/** Ways in that store emails (the send rate): each counts the email rows it committed. */
export type AcceptedWay = 'http' | 'smtp' | 'campaign' | 'automation';

export const emailsAccepted = new Counter({
  name: 'herald_emails_accepted_total',
  help: 'Email rows stored by this process (QUEUED for delivery, or SUPPRESSED), by the way they came in: http (POST /v1/send), smtp (SMTP submission), campaign (campaign batches), automation (SEND_EMAIL steps).',
  labelNames: ['way'] as const,
  registers: [processRegistry],
});

/** Outcomes of delivery attempts, as the delivery queue committed them. */
export type DeliveryOutcome = 'sent' | 'failed' | 'retried' | 'cancelled';

export const deliveries = new Counter({
  name: 'herald_deliveries_total',
  help: 'Delivery attempts whose outcome this worker committed: sent, failed (permanently), retried (a transient failure, back in the queue), cancelled (the campaign was cancelled or the contact unsubscribed meanwhile).',
  labelNames: ['outcome'] as const,
  registers: [processRegistry],
});

/** Outcomes of outbound webhook attempts (worker/webhookQueue.ts). */
export type WebhookOutcome = 'succeeded' | 'retried' | 'failed';

export const webhookDeliveries = new Counter({
  name: 'herald_webhook_deliveries_total',
  help: 'Outbound webhook attempts whose outcome this worker committed: succeeded (a 2xx), retried (will be attempted again), failed (the last attempt failed; the delivery is FAILED).',
  labelNames: ['outcome'] as const,
  registers: [processRegistry],
});

export const workflowStarts = new Counter({
  name: 'herald_engine_workflow_starts_total',
  help: 'Workflow starts this process asked of the engine and the engine accepted (a start of a running id joins it and counts too).',
  labelNames: ['engine', 'workflow'] as const,
  registers: [processRegistry],
});

export const workflowStartFailures = new Counter({
  name: 'herald_engine_workflow_start_failures_total',
  help: 'Workflow starts the engine refused or that could not reach it (the dispatchers retry them).',
  labelNames: ['engine', 'workflow'] as const,
  registers: [processRegistry],
});

export const workflowFailures = new Counter({
  name: 'herald_engine_workflow_failures_total',
  help: 'Workflow runs executed by this worker that ended in an error (not counting cancellations or continue-as-new).',
  labelNames: ['engine', 'workflow'] as const,
  registers: [processRegistry],
});

/** The route label of a request that matched no route: one fixed value, so that scanners cannot grow the series. */
export const UNMATCHED_ROUTE = 'unmatched';

export const httpDuration = new Histogram({
  name: 'herald_http_request_duration_seconds',
  help: 'HTTP requests by method, route pattern (as the router declares it, e.g. /contacts/:id; "unmatched" when none matched) and status.',
  labelNames: ['method', 'route', 'status'] as const,
  // From a cached read (~1 ms) to a slow send or DNS check (seconds).
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [processRegistry],
});

// The known label values start at 0, so that a rate() over them has a start, and a scrape shows them before any event.
for (const way of ['http', 'smtp', 'campaign', 'automation'] satisfies AcceptedWay[]) emailsAccepted.inc({ way }, 0);
for (const outcome of ['sent', 'failed', 'retried', 'cancelled'] satisfies DeliveryOutcome[]) deliveries.inc({ outcome }, 0);
for (const outcome of ['succeeded', 'retried', 'failed'] satisfies WebhookOutcome[]) webhookDeliveries.inc({ outcome }, 0);

let defaults = false;

/** prom-client's process metrics (CPU, memory, event loop lag, GC, handles), collected once per process. */
export function collectProcessMetrics(): void {
  if (defaults) return;
  defaults = true;
  collectDefaultMetrics({ register: processRegistry });
}
