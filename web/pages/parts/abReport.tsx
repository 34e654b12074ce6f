import { useState } from 'preact/hooks';
import { api, call, type Schemas } from '../../api';
import { Badge, Button, ConfirmDialog, formatRelative, Icon, Progress, Time, toast, type Tone } from '../../components';
import { useLoad } from '../../hooks';
import { useSession } from '../../session';
import { VARIANT_KEYS } from '../../../campaigns/abRules';
import { certaintyWords, keysPhrase, METRIC_WORDS, pWords, waitWords, type Significance } from './abWords';
import { formatWhen, type Campaign } from './campaigns';
import { percent, Stat } from './stats';

/**
 * An A/B campaign's page (issue 32): where its test stands (not started, sampling, waiting until …, decided), the
 * variants side by side (a card each: its subject, its sample's figures and how sure its difference is, the winner
 * marked), the rest's figures once the winner goes to it, and, for a person who may write while the test runs, a
 * "Choose B as winner" button per variant (POST /campaigns/:id/winner, after a confirmation). The figures are GET
 * /campaigns/:id/stats's `variants`, `rest` and `decision`, asked again by the page while the campaign sends.
 */
type Stats = Schemas['CampaignStats'];
type VariantStats = NonNullable<Stats['variants']>[number];
type AbTest = NonNullable<Campaign['abTest']>;
type DecidingMetric = 'opens' | 'clicks';

const rateOf = (v: { uniqueOpens: number; uniqueClicks: number; delivered: number }, m: DecidingMetric) => (v.delivered ? (m === 'opens' ? v.uniqueOpens : v.uniqueClicks) / v.delivered : 0);

/** The variant ahead on the metric (opens for a manual test), when one is strictly ahead of every other. */
function leaderOf(variants: VariantStats[], metric: DecidingMetric): number | null {
  const rates = variants.map((v) => rateOf(v, metric));
  const best = Math.max(...rates);
  return best > 0 && rates.filter((r) => r === best).length === 1 ? rates.indexOf(best) : null;
}

/** The test's phase in a word and a tone. */
function phaseBadge(c: Campaign, t: AbTest): [string, Tone] {
  if (c.status === 'DRAFT' || c.status === 'SCHEDULED') return ['Not started', 'neutral'];
  if (t.phase === 'DECIDED') return ['Decided', 'success'];
  if (c.status !== 'SENDING') return ['Stopped', 'warning'];
  if (t.phase === 'WAITING') return [t.chosen ? 'Winner chosen' : 'Waiting', 'accent'];
  return ['Sampling', 'info'];
}

export function AbTestReport({ campaign: c, stats: s, baseSubject, onChange }: {
  campaign: Campaign; stats: Stats | null;
  /** The campaign's own subject (its template's when it has none): a variant's when it gives none. */
  baseSubject: string;
  onChange: (c: Campaign) => void;
}) {
  const writer = useSession().can('write');
  const t = c.abTest!;
  const variants = c.variants ?? [];
  const [choosing, setChoosing] = useState<number | null>(null);
  // A variant written from a template shows that template's subject when it has none of its own.
  const templateIds = [...new Set(variants.map((v) => v.templateId).filter((id): id is string => !!id))];
  const templates = useLoad(() => Promise.all(templateIds.map((id) => call(api.GET('/templates/{id}', { params: { path: { id } } }), { expect: [404] }).catch(() => null))),
    [templateIds.join(',')]);
  const templateOf = (id: string | null) => (id ? templates.data?.find((x) => x?.id === id) ?? null : null);

  const running = c.status === 'SENDING' && t.phase !== 'DECIDED' && t.chosen === null;
  const mayChoose = writer && running && (t.phase === 'SAMPLE' || t.phase === 'WAITING');
  const metrics: DecidingMetric[] = t.metric === 'manual' ? ['opens', 'clicks'] : [t.metric];
  const leadMetric: DecidingMetric = t.metric === 'clicks' ? 'clicks' : 'opens';
  const figures = s?.variants ?? null;
  const leader = figures && t.phase !== 'DECIDED' ? leaderOf(figures, leadMetric) : null;
  const decision = s?.decision ?? null;
  const over = t.phase === 'DECIDED' || c.status !== 'SENDING';
  const [phase, tone] = phaseBadge(c, t);
  const sentSoFar = figures ? figures.reduce((n, v) => n + v.sent + v.failed + v.cancelled + v.suppressed, 0) : 0;

  let line;
  if (c.status === 'DRAFT' || c.status === 'SCHEDULED') {
    line = <>When it goes, {t.samplePercent} % of the audience gets {keysPhrase(variants.length)}; {t.metric === 'manual'
      ? <>the variant a person chooses then goes to the rest (the figures have {waitWords(t.waitMinutes)} to come in).</>
      : <>after {waitWords(t.waitMinutes)}, the one with the most {METRIC_WORDS[t.metric]} goes to the rest.</>}</>;
  } else if (t.phase === 'DECIDED') {
    // From the campaign, as the phase is: the stats (and their decision) are another request, and may still be the
    // ones from before the decision (a person's choice then read "won on unique opens", seen on a loaded machine).
    const by = t.chosen !== null ? ', chosen by a person,' : ` on ${METRIC_WORDS[t.metric]}`;
    const rest = s?.rest?.totalRecipients ? ` (${s.rest.totalRecipients.toLocaleString()} contact${s.rest.totalRecipients === 1 ? '' : 's'} so far)` : '';
    line = <><strong>{t.winner} won</strong>{by} on <Time value={t.decidedAt} />: it {c.status === 'SENDING' ? 'is going' : 'went'} to the rest of the audience{c.status === 'SENDING' ? rest : ''}.</>;
  } else if (c.status !== 'SENDING') {
    line = <>The test stopped {t.phase === 'WAITING' ? 'during its wait' : 'while its sample was sending'}: no winner went to the rest of the audience.</>;
  } else if (t.chosen) {
    line = <><strong>{t.chosen} was chosen</strong>: it goes to the rest of the audience in a moment.</>;
  } else if (t.phase === 'WAITING' && t.waitEndsAt) {
    const ended = Date.parse(t.waitEndsAt) <= Date.now();
    if (t.metric === 'manual') {
      line = ended ? <>The wait is over: the rest of the audience waits for a person to choose the winner.</>
        : <>Waiting until <strong>{formatWhen(t.waitEndsAt)}</strong> ({formatRelative(t.waitEndsAt)}) for the figures; then the rest waits for a person to choose the winner.</>;
    } else {
      line = <>Waiting until <strong>{formatWhen(t.waitEndsAt)}</strong> ({formatRelative(t.waitEndsAt)}): then the variant with the most {METRIC_WORDS[t.metric]} goes to the rest{writer ? ', unless you choose one first' : ''}.</>;
    }
  } else if (t.phase === 'SAMPLE') {
    line = <>Sending {keysPhrase(variants.length)} to the {t.sampleSize !== null ? `${t.sampleSize.toLocaleString()} contacts of the ` : ''}{t.samplePercent} % sample: {sentSoFar.toLocaleString()} sent so far. The wait of {waitWords(t.waitMinutes)} starts once they have all left.</>;
  } else {
    line = <>Choosing the sample…</>;
  }

  const chosen = choosing !== null ? VARIANT_KEYS[choosing]! : '';
  const chosenSig = choosing !== null && figures ? figures[choosing]?.significance[leadMetric] : null;

  return (
    <>
      <section class="card" aria-labelledby="campaign-ab">
        <div class="card-header">
          <h2 id="campaign-ab">A/B test</h2>
          <Badge tone={tone}>{phase}</Badge>
          <span class="muted small ab-settings-line">{t.samplePercent} % sample · {waitWords(t.waitMinutes)} wait · {t.metric === 'manual' ? 'winner chosen by a person' : `winner by ${METRIC_WORDS[t.metric]}`}</span>
        </div>
        <div class="card-body stack">
          <p class="ab-phase" aria-live="polite">{line}</p>
          {t.phase === 'SAMPLE' && t.sampleSize ? <Progress label="Sample emails handled" value={sentSoFar} max={Math.max(t.sampleSize, 1)} /> : null}
          {decision ? <DecisionLine decision={decision} /> : null}
        </div>
      </section>

      <div class="ab-cards" role="list" aria-label="Variants">
        {variants.map((v, i) => {
          const key = VARIANT_KEYS[i]!;
          const f = figures?.[i];
          const winner = t.winner === key;
          const subject = v.subject ?? templateOf(v.templateId)?.subject ?? baseSubject;
          return (
            <article key={key} role="listitem" class={`card ab-card${winner ? ' ab-card-winner' : ''}`} aria-labelledby={`ab-card-${key}`}>
              <div class="ab-card-head">
                <span class="ab-key" aria-hidden="true">{key}</span>
                <h3 id={`ab-card-${key}`}>Variant {key}{v.name ? <span class="ab-card-name">: {v.name}</span> : null}</h3>
                {winner ? <Badge tone="success">Winner</Badge> : leader === i ? <Badge tone="accent">Leading</Badge> : null}
              </div>
              <dl class="ab-card-content">
                <dt>Subject</dt><dd>{subject || '—'}</dd>
                {v.previewText ? <><dt>Preview text</dt><dd>{v.previewText}</dd></> : null}
                {v.fromName ? <><dt>From name</dt><dd>{v.fromName}</dd></> : null}
                <dt>Message</dt><dd>{v.templateId ? <>Template {templateOf(v.templateId) ? <a href={`/app/templates/${v.templateId}`}>{templateOf(v.templateId)!.name}</a> : '…'}</> : v.body !== null ? 'Its own HTML' : 'The campaign’s'}</dd>
              </dl>
              {f ? (
                <>
                  <div class="ab-figures">
                    <Stat label="Sent" value={f.sent} note={f.queued ? `${f.queued.toLocaleString()} queued` : `of ${f.totalRecipients.toLocaleString()}`} />
                    <Stat label="Delivered" value={f.delivered} note={`${percent(f.delivered, f.sent)} of sent`} />
                    <Rate label="Opened" part={f.uniqueOpens} whole={f.delivered} word="unique open" />
                    <Rate label="Clicked" part={f.uniqueClicks} whole={f.delivered} word="unique click" />
                    <Stat label="Bounced" value={f.bounced} note={`${percent(f.bounced, f.sent)} of sent`} />
                    <Stat label="Unsubscribed" value={f.unsubscribed} note={`${percent(f.unsubscribed, f.delivered)} of delivered`} />
                  </div>
                  <ul class="ab-certainty">
                    {metrics.map((m) => <Certainty key={m} sig={f.significance[m]} variant={key} metric={m} over={over} />)}
                  </ul>
                </>
              ) : c.status === 'DRAFT' || c.status === 'SCHEDULED' ? null : <p class="muted small">No figures yet.</p>}
              {mayChoose ? <Button class="ab-choose" onClick={() => setChoosing(i)}><Icon name="check" />Choose {key} as winner</Button> : null}
            </article>
          );
        })}
      </div>

      {s?.rest && c.status !== 'DRAFT' && c.status !== 'SCHEDULED' ? <RestCard rest={s.rest} campaign={c} /> : null}

      {mayChoose ? (
        <ConfirmDialog open={choosing !== null} title={`Send ${chosen} to the rest of the audience?`} confirm={`Choose ${chosen} as winner`}
          dismiss="Keep testing" onClose={() => setChoosing(null)}
          onConfirm={async () => {
            const done = await call(api.POST('/campaigns/{id}/winner', { params: { path: { id: c.id } }, body: { variant: chosen as (typeof VARIANT_KEYS)[number] } }));
            toast(`${chosen} goes to the rest of the audience`);
            onChange(done);
          }}>
          The test ends now{t.waitEndsAt && Date.parse(t.waitEndsAt) > Date.now() ? `, without waiting until ${formatWhen(t.waitEndsAt)}` : ''}: variant {chosen}
          {variants[choosing ?? 0]?.name ? ` (“${variants[choosing ?? 0]!.name}”)` : ''} goes to everyone in the audience who has not had an email of this campaign.
          {chosenSig && !chosenSig.significant ? ` Its difference on ${METRIC_WORDS[leadMetric]} is not significant yet (${pWords(chosenSig.pValue)}).` : ''} This cannot be undone.
        </ConfirmDialog>
      ) : null}
    </>
  );
}

/** A rate among delivered emails as the tile's figure, the count under it. */
function Rate({ label, part, whole, word }: { label: string; part: number; whole: number; word: string }) {
  return (
    <div class="stat">
      <div class="stat-label">{label}</div>
      <div class="stat-value">{percent(part, whole)}</div>
      <div class="stat-note">{`${part.toLocaleString()} ${word}${part === 1 ? '' : 's'}`}</div>
    </div>
  );
}

function Certainty({ sig, variant, metric, over }: { sig: Significance; variant: string; metric: DecidingMetric; over: boolean }) {
  const { text, significant } = certaintyWords(sig, variant, over);
  return (
    <li class={significant ? 'ab-sure' : undefined}>
      <Icon name={significant ? 'check' : 'alert'} size={14} />
      <span><span class="muted">{metric === 'opens' ? 'Opens' : 'Clicks'}:</span> <span>{text}</span></span>
    </li>
  );
}

/** The decision as it was made: the figures per variant and how sure the winner's lead was. */
function DecisionLine({ decision: d }: { decision: NonNullable<Stats['decision']> }) {
  const metric: DecidingMetric = d.metric === 'clicks' ? 'clicks' : 'opens';
  const sig = d.significance[metric];
  const { text, significant } = certaintyWords(sig, d.winner, true);
  const words = METRIC_WORDS[metric];
  const head = significant ? `${text} on ${words}` : !sig ? 'No figures to compare'
    : sig.z === 0 ? `No difference in ${words}` : `Not significant: the difference in ${words} could be chance (${pWords(sig.pValue)})`;
  return (
    <div class={`ab-decision${significant ? ' ab-decision-sure' : ''}`}>
      <Icon name={significant ? 'check' : 'alert'} size={16} />
      <div>
        <p class="strong">{head}.</p>
        <p class="muted small">
          When it was decided: {d.figures.map((f) => `${f.key} ${percent(metric === 'opens' ? f.uniqueOpens : f.uniqueClicks, f.delivered)} of ${f.delivered.toLocaleString()} delivered`).join(' · ')} ({METRIC_WORDS[metric]}).
          {significant ? '' : ' The sample was too small, or the variants too close, for the difference to be sure.'}
        </p>
      </div>
    </div>
  );
}

function RestCard({ rest: r, campaign: c }: { rest: NonNullable<Stats['rest']>; campaign: Campaign }) {
  const t = c.abTest!;
  const started = t.phase === 'DECIDED' && r.totalRecipients > 0;
  return (
    <section class="card" aria-labelledby="campaign-ab-rest">
      <div class="card-header">
        <h2 id="campaign-ab-rest">The rest of the audience</h2>
        {t.winner ? <span class="muted small">Variant {t.winner}, the winner</span> : null}
      </div>
      <div class="card-body stack">
        {!started ? (
          <p class="muted small">{c.status === 'SENDING' ? 'The rest gets the winner once it is decided: everyone in the audience then who has not had an email of this campaign.' : 'The rest of the audience got nothing.'}</p>
        ) : (
          <>
            {c.status === 'SENDING' ? <Progress label="Emails to the rest handled" value={r.totalRecipients - r.queued} max={Math.max(r.totalRecipients, 1)} /> : null}
            <div class="stats campaign-stats">
              <Stat label="Recipients" value={r.totalRecipients} note={r.queued ? `${r.queued.toLocaleString()} still queued` : undefined} />
              <Stat label="Delivered" value={r.delivered} note={`${percent(r.delivered, r.totalRecipients)} of recipients`} />
              <Rate label="Opened" part={r.uniqueOpens} whole={r.delivered} word="unique open" />
              <Rate label="Clicked" part={r.uniqueClicks} whole={r.delivered} word="unique click" />
            </div>
          </>
        )}
      </div>
    </section>
  );
}
