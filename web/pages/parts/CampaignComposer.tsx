import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { api, ApiFailure, call, type Schemas } from '../../api';
import {
  Button, ConfirmDialog, Dialog, FormError, Icon, MessagePreview, Page, SelectField, Spinner, TextAreaField, TextField, toast,
} from '../../components';
import { useLoad } from '../../hooks';
import { useSession } from '../../session';
import { audiencePhrase, campaignContent, contacts, formatWhen, viewerZone, type Campaign } from './campaigns';
import { ConditionBuilder, conditionErrors, isComplete, newCondition, type AudienceCondition } from './ConditionBuilder';
import { usePreview, useTemplates } from './templates';
import { TemplatePicker } from './TemplatePicker';
import { abBodyOf, abFormErrors, abFormOf, AbTestSection, type AbForm } from './abComposer';
import { keysPhrase, testSentence } from './abWords';
import { VARIANT_KEYS as VARIANT_LETTERS } from '../../../campaigns/abRules';

/**
 * The campaign composer (issue 29): a new campaign (`/app/campaigns/new`) or a DRAFT (`/app/campaigns/:id`). Its
 * name, subject, sender (the project's verified domains as suggestions: GET /domains), its content (an HTML body
 * beside its preview, or one of the project's templates: its subject and sender then show as the fields' placeholders
 * and may be overridden, its message is rendered by POST /templates/preview in the preview), and audience: every subscribed contact, a segment, or an inline filter, with the number of recipients it reaches now
 * (POST /campaigns/audience). Saved as a draft (POST, then PATCH /campaigns/:id); a test sent to chosen addresses
 * (POST /campaigns/:id/test); scheduled in the viewer's time zone or sent now (POST /campaigns/:id/send), each after a
 * confirmation that says how many will receive it; a draft deleted after one too. Every action saves first what was
 * changed, so what is tested or sent is what is on the screen.
 */
type AudienceType = Campaign['audienceType'];
type Template = Schemas['Template'];

interface Form {
  name: string;
  /** Written here (`body`), or a template's (`templateId`). */
  source: 'own' | 'template';
  templateId: string;
  subject: string;
  /** The line inboxes show after the subject (a hidden preheader). */
  previewText: string;
  from: string;
  fromName: string;
  replyTo: string;
  body: string;
  audienceType: AudienceType;
  segmentId: string;
  filter: AudienceCondition | null;
  /** The A/B test: its variants and settings (parts/abComposer.tsx). */
  ab: AbForm;
}

const STARTER_BODY = `<h1>Hello {{ data.firstName | default: "there" }}</h1>
<p>Here is what is new this month.</p>
<p><a href="https://example.com/changelog">Read the changelog</a></p>`;

function formOf(c: Campaign | null): Form {
  return {
    name: c?.name ?? '', source: c?.templateId ? 'template' : 'own', templateId: c?.templateId ?? '',
    subject: c?.subject ?? '', previewText: c?.previewText ?? '', from: c?.from ?? '', fromName: c?.fromName ?? '', replyTo: c?.replyTo ?? '',
    body: c?.body ?? STARTER_BODY, audienceType: c?.audienceType ?? 'ALL', segmentId: c?.segmentId ?? '', filter: c?.audienceFilter ?? null,
    ab: abFormOf(c),
  };
}

/** The audience as the API takes it (POST /campaigns/audience, and a campaign's own fields). */
const audienceOf = (f: Pick<Form, 'audienceType' | 'segmentId' | 'filter'>) => ({
  audienceType: f.audienceType,
  ...(f.audienceType === 'SEGMENT' && f.segmentId ? { segmentId: f.segmentId } : {}),
  ...(f.audienceType === 'FILTERED' && f.filter ? { audienceFilter: f.filter } : {}),
});

/** The campaign as the API takes it. With a template, an empty field is the template's (null), and the body is its. */
function bodyOf(f: Form) {
  const own = f.source === 'own';
  return {
    name: f.name.trim(), templateId: own ? null : f.templateId || null,
    subject: own || f.subject.trim() ? f.subject : null, body: own ? f.body : null, from: f.from.trim() || (own ? '' : null),
    fromName: f.fromName.trim() || null, replyTo: f.replyTo.trim() || null, previewText: f.previewText.trim() ? f.previewText : null,
    ...audienceOf(f),
    ...abBodyOf(f.ab),
  };
}

/** Whether the part of a campaign that an error's path names (`variants.1.subject`, `abTest.samplePercent`) is the same in both. */
function unchangedAt(before: unknown, after: unknown, path: string): boolean {
  const at = (value: unknown) => path.split('.').reduce<unknown>((v, key) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined), value);
  return JSON.stringify(at(before)) === JSON.stringify(at(after));
}

/** A `datetime-local` value (the viewer's wall-clock time) for a date: the next whole hour after now by default. */
function localInput(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
const nextHour = () => { const d = new Date(Date.now() + 3_600_000); d.setMinutes(0, 0, 0); return d; };
const zoneOffset = (d: Date) => new Intl.DateTimeFormat(undefined, { timeZoneName: 'shortOffset' }).formatToParts(d).find((p) => p.type === 'timeZoneName')?.value ?? '';

/** A radio choice with its label and a line under it (the checkbox's layout: .checkbox). */
function Choice({ name, value, checked, onChoose, label, hint, disabled }: {
  name: string; value: string; checked: boolean; onChoose: () => void; label: string; hint: string; disabled?: boolean;
}) {
  const id = useId();
  return (
    <div class="checkbox audience-choice">
      <input type="radio" id={id} name={name} value={value} checked={checked} disabled={disabled} onChange={onChoose} aria-describedby={`${id}-hint`} />
      <div>
        <label for={id}>{label}</label>
        <span class="checkbox-hint" id={`${id}-hint`}>{hint}</span>
      </div>
    </div>
  );
}

/**
 * The inline filter: the segments' condition builder (web/pages/parts/ConditionBuilder.tsx), the API's messages shown
 * on the filter they concern (their paths under `audienceFilter`).
 */
function InlineFilter({ value, onChange, fields }: { value: AudienceCondition; onChange: (c: AudienceCondition) => void; fields: Record<string, string> }) {
  return <ConditionBuilder value={value} onChange={onChange} errors={conditionErrors(fields, 'audienceFilter')} />;
}

type Count = { state: 'idle' } | { state: 'counting' } | { state: 'counted'; count: number } | { state: 'failed'; message: string };

/** How many the audience reaches now, asked again (after a pause) whenever the audience changes. */
function useAudienceCount(audience: ReturnType<typeof audienceOf>, ready: boolean): { count: Count; fields: Record<string, string> } {
  const [count, setCount] = useState<Count>({ state: 'idle' });
  const [fields, setFields] = useState<Record<string, string>>({});
  const key = JSON.stringify(audience);
  useEffect(() => {
    setFields({});
    if (!ready) { setCount({ state: 'idle' }); return undefined; }
    setCount({ state: 'counting' });
    let live = true;
    const timer = setTimeout(() => {
      call(api.POST('/campaigns/audience', { body: audience }), { form: true }).then(
        (r) => { if (live) setCount({ state: 'counted', count: r.count }); },
        (err: unknown) => {
          if (!live) return;
          const f = err instanceof ApiFailure ? err.fields : {};
          setFields(f);
          setCount({ state: 'failed', message: Object.keys(f).length ? 'Fix the audience to count its recipients' : err instanceof Error ? err.message : 'Not counted' });
        },
      );
    }, 350);
    return () => { live = false; clearTimeout(timer); };
  }, [key, ready]);
  return { count, fields };
}

export function CampaignComposer({ campaign, onSaved, onSent, onDeleted }: {
  campaign: Campaign | null;
  /** After each save: a new campaign's first one gives it its id (the page moves to its URL). */
  onSaved: (c: Campaign) => void;
  /** Scheduled or sending: the page shows it as such. */
  onSent: (c: Campaign) => void;
  onDeleted: () => void;
}) {
  const { me } = useSession();
  const [form, setForm] = useState<Form>(() => formOf(campaign));
  const [id, setId] = useState<string | null>(campaign?.id ?? null);
  const [saved, setSaved] = useState<string>(() => (campaign ? JSON.stringify(bodyOf(formOf(campaign))) : ''));
  const [savedAt, setSavedAt] = useState<string | null>(campaign?.updatedAt ?? null);
  // The fields refused (the API's 422, or the form's own checks) and the campaign as it was then: an error is shown while
  // the part it names is unchanged, and goes when that part is edited (a share fixed from 5 to 50 is no longer wrong).
  const [refusal, setRefusal] = useState<{ fields: Record<string, string>; at: ReturnType<typeof bodyOf> | null }>({ fields: {}, at: null });
  const formNow = useRef(form);
  formNow.current = form;
  const setFields = (f: Record<string, string>) => setRefusal({ fields: f, at: bodyOf(formNow.current) });
  const [error, setError] = useState('');
  const [busy, setBusy] = useState<'save' | 'test' | 'schedule' | 'send' | null>(null);
  const [asking, setAsking] = useState<null | { what: 'send' | 'schedule'; count: number } | { what: 'test' } | { what: 'delete' }>(null);
  const ownId = useRef(id);
  ownId.current = id;
  // The campaign as last saved (what a send or a test acts on).
  const latest = useRef<Campaign | null>(campaign);
  // The variant the preview shows (an A/B test's: A by default).
  const [previewOf, setPreviewOf] = useState(0);

  // Another draft opened in the same page (not this one's own save coming back): its form.
  useEffect(() => {
    if (campaign && campaign.id !== ownId.current) {
      setForm(formOf(campaign));
      setId(campaign.id);
      latest.current = campaign;
      setSaved(JSON.stringify(bodyOf(formOf(campaign))));
      setSavedAt(campaign.updatedAt);
      setFields({});
      setError('');
    }
  }, [campaign?.id]);

  const domains = useLoad(() => call(api.GET('/domains', { params: { query: { limit: 100, status: 'VERIFIED' } } })), []);
  const segments = useLoad(() => call(api.GET('/segments', { params: { query: { limit: 100 } } })), []);
  const verified = domains.data?.items.map((d) => d.domain) ?? [];
  // A new campaign written here starts from the project's first verified domain (a template has its own sender).
  const suggestedFrom = verified[0] ? `news@${verified[0]}` : '';
  // The sender this form filled in itself, for chooseSource: a click handled with an earlier render's closure (the
  // domains answered in between) saw no suggestion yet and kept it over the template's (a console test at load).
  const filledFrom = useRef('');
  useEffect(() => {
    if (id || !suggestedFrom) return;
    setForm((f) => {
      if (f.from || f.source !== 'own') return f;
      filledFrom.current = suggestedFrom;
      return { ...f, from: suggestedFrom };
    });
  }, [suggestedFrom, form.source]);
  const templates = useTemplates();
  const template: Template | undefined = templates.list.find((t) => t.id === form.templateId);
  const fromTemplate = form.source === 'template';
  /** "Use a template": a new campaign's suggested sender gives way to the template's. */
  const chooseSource = (source: Form['source']) => setForm((f) => ({ ...f, source, ...(source === 'template' && !id && f.from === filledFrom.current ? { from: '' } : {}) }));

  const set = <K extends keyof Form>(key: K) => (value: Form[K]) => setForm((f) => ({ ...f, [key]: value }));
  const audience = audienceOf(form);
  const audienceReady = form.audienceType === 'ALL' || (form.audienceType === 'SEGMENT' && !!form.segmentId) || (form.audienceType === 'FILTERED' && !!form.filter && isComplete(form.filter));
  const counted = useAudienceCount(audience, audienceReady);
  const now = bodyOf(form);
  const dirty = JSON.stringify(now) !== saved;
  const fields = Object.fromEntries(Object.entries(refusal.fields).filter(([path]) => unchangedAt(refusal.at, now, path)));
  const shown = { ...counted.fields, ...fields };
  // "See the fields marked below" goes with the last of those marks.
  const formError = Object.keys(refusal.fields).length && !Object.keys(fields).length ? '' : error;

  /** Saves what is on the screen (unless it is saved already): the campaign, or null when the API refused it. */
  const save = async (): Promise<Campaign | null> => {
    setFields({});
    setError('');
    if (fromTemplate && !form.templateId) { setFields({ templateId: 'Choose a template, or write the message here' }); return null; }
    if (form.audienceType === 'SEGMENT' && !form.segmentId) { setFields({ segmentId: 'Choose a segment' }); return null; }
    if (form.audienceType === 'FILTERED' && (!form.filter || !isComplete(form.filter))) { setFields({ audienceFilter: 'Finish the filter: each one needs its field and value' }); return null; }
    const abErrors = abFormErrors(form.ab);
    if (Object.keys(abErrors).length) { setFields(abErrors); setError('The campaign was not saved: see the fields marked below.'); return null; }
    if (id && !dirty && latest.current) return latest.current;
    try {
      const body = bodyOf(form);
      const c = id
        ? await call(api.PATCH('/campaigns/{id}', { params: { path: { id } }, body }), { form: true })
        : await call(api.POST('/campaigns', { body }), { form: true });
      setId(c.id);
      ownId.current = c.id;
      latest.current = c;
      setSaved(JSON.stringify(body));
      setSavedAt(c.updatedAt);
      onSaved(c);
      return c;
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      setFields(f);
      if (!Object.keys(f).length) setError(err instanceof Error ? err.message : 'The campaign was not saved.');
      else setError('The campaign was not saved: see the fields marked below.');
      return null;
    }
  };

  const run = async (what: 'save' | 'test' | 'schedule' | 'send', work: () => Promise<void>) => {
    setBusy(what);
    try { await work(); } finally { setBusy(null); }
  };

  const saveDraft = () => run('save', async () => { if (await save()) toast('Draft saved'); });

  /** Saves, then counts the saved audience: the number the confirmation names. */
  const askToSend = (what: 'send' | 'schedule') => run(what, async () => {
    const c = await save();
    if (!c) return;
    try {
      const { count } = await call(api.POST('/campaigns/audience', { body: audienceOf({ audienceType: c.audienceType, segmentId: c.segmentId ?? '', filter: c.audienceFilter ?? null }) }), { form: true });
      setAsking({ what, count });
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      setFields(f);
      setError(Object.keys(f).length ? 'The audience cannot be counted: see below.' : err instanceof Error ? err.message : 'The audience was not counted.');
    }
  });

  const sendNow = async () => {
    let c: Campaign;
    try {
      c = await call(api.POST('/campaigns/{id}/send', { params: { path: { id: id! } }, body: {} }), { form: true });
    } catch (err) {
      // Refused at a field (an A/B test's share that no longer fits the audience): shown there, the dialog closed.
      const f = err instanceof ApiFailure ? err.fields : {};
      if (!Object.keys(f).length) { toast.error(err instanceof Error ? err.message : 'The campaign was not sent.'); throw err; }
      setFields(f);
      setError('Not sent: see the fields marked below.');
      return;
    }
    toast(c.status === 'SENDING' ? (c.abTest ? 'The A/B test has started' : 'Sending has started') : 'The campaign is on its way');
    onSent(c);
  };

  // With a template: what goes out, the fields' own values else the template's (as the API merges them).
  const sent = campaignContent({
    subject: form.subject.trim() ? form.subject : null, body: null, bodyType: 'html', from: form.from.trim() || null,
    fromName: form.fromName.trim() || null, replyTo: form.replyTo.trim() || null,
  }, template);
  const own = { from: form.from, fromName: form.fromName.trim(), subject: form.subject };
  const base = fromTemplate ? { from: sent.from, fromName: sent.fromName ?? '', subject: sent.subject } : own;

  // What the preview shows: the campaign, or with an A/B test one variant, each part its own else its template's else
  // the campaign's (as the API resolves a variant: campaigns/abTest.ts resolveVariant).
  const shownIndex = form.ab.on ? Math.min(previewOf, form.ab.variants.length - 1) : -1;
  const variant = shownIndex >= 0 ? form.ab.variants[shownIndex] : undefined;
  const variantTemplate = variant?.content === 'template' ? templates.list.find((t) => t.id === variant.templateId) : undefined;
  const view = variant && variant.content !== 'campaign'
    ? { kind: variant.content, template: variantTemplate, html: variant.body }
    : { kind: fromTemplate ? 'template' as const : 'own' as const, template, html: form.body };
  const shownSubject = (variant?.subject.trim() ? variant.subject : variantTemplate?.subject) || base.subject;
  const rendered = usePreview(view.kind === 'template' && view.template ? { subject: shownSubject, body: view.template.body, bodyType: view.template.bodyType } : null);
  const envelope = {
    from: base.from, fromName: variant?.fromName.trim() || base.fromName,
    subject: view.kind === 'template' && view.template ? rendered.preview?.subject ?? shownSubject : shownSubject,
    previewText: variant?.previewText.trim() || form.previewText.trim(),
  };
  // The preview follows the body a moment after the typing stops: each render of it parses the whole message again.
  const [previewHtml, setPreviewHtml] = useState(view.html);
  useEffect(() => {
    const timer = setTimeout(() => setPreviewHtml(view.html), 300);
    return () => clearTimeout(timer);
  }, [view.html]);
  /** A field's hint with a template: whether the template gives it. */
  const fromIt = (value: string | null | undefined, own: string) => (value ? <>The template’s, unless you write {own} here.</> : null);

  const title = form.name.trim() || (id ? 'Untitled campaign' : 'New campaign');
  const segmentOptions: [string, string][] = [['', segments.loading ? 'Loading segments…' : 'Choose a segment'], ...(segments.data?.items ?? []).map((s): [string, string] => [s.id, s.name])];
  const segmentName = segments.data?.items.find((s) => s.id === form.segmentId)?.name;

  // The confirmation's figures: the audience counted after the save, and the saved test cut at that size.
  const askedCount = asking && 'count' in asking ? asking.count : 0;
  const savedTest = latest.current?.abTest && latest.current.variants?.length ? { test: latest.current.abTest, variants: latest.current.variants.length } : null;
  const testLine = savedTest && askedCount > 0 ? testSentence(savedTest.test, savedTest.variants, askedCount) : '';

  let countLine: ComponentChildren;
  if (counted.count.state === 'counting') countLine = <><Spinner label="" /> Counting recipients…</>;
  else if (counted.count.state === 'counted') countLine = <><Icon name="users" /> <strong>{contacts(counted.count.count)}</strong> would receive it now</>;
  else if (counted.count.state === 'failed') countLine = <span class="muted">{counted.count.message}</span>;
  else countLine = <span class="muted">{form.audienceType === 'SEGMENT' ? 'Choose a segment to count its recipients' : 'Write a filter to count its recipients'}</span>;

  return (
    <Page title={title} breadcrumb={<a href="/app/campaigns"><Icon name="arrowLeft" size={14} />Campaigns</a>}
      lede={id ? <>Draft{savedAt ? <> · saved <time dateTime={savedAt}>{new Date(savedAt).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}</time></> : null}{dirty ? ' · unsaved changes' : ''}</> : 'Write it, choose who receives it, test it, then send it now or at a time.'}
      actions={id ? <Button variant="ghost" class="danger-text" onClick={() => setAsking({ what: 'delete' })}><Icon name="trash" />Delete draft</Button> : null}>
      <form class="campaign-composer" noValidate onSubmit={(e) => { e.preventDefault(); void saveDraft(); }} aria-label="Campaign">
        <div class="composer-main stack">
          <FormError>{formError}</FormError>
          <section class="card" aria-labelledby="composer-message">
            <div class="card-header"><h2 id="composer-message">Message</h2></div>
            <div class="card-body form">
              <TextField label="Campaign name" value={form.name} onValue={set('name')} error={shown.name} required maxLength={200}
                hint="For you and your team; recipients never see it." placeholder="June newsletter" />
              <div class="composer-row">
                <TextField label="Subject" value={form.subject} onValue={set('subject')} error={shown.subject} required={!fromTemplate || !template} fieldClass="grow"
                  hint={(fromTemplate && fromIt(template?.subject, 'another')) || <>What the inbox shows. Liquid works here too: <code>{'{{ data.firstName }}'}</code>.</>}
                  placeholder={fromTemplate && template ? template.subject : 'What’s new in June'} />
                <TextField label="Preview text" value={form.previewText} onValue={set('previewText')} error={shown.previewText} fieldClass="grow" maxLength={500}
                  hint="Optional: the line inboxes show after the subject." placeholder="Three new features and a fix you asked for" />
              </div>
              <div class="composer-row">
                <TextField label="From address" type="email" value={form.from} onValue={set('from')} error={shown.from} required={!fromTemplate || !template?.from} list="composer-from" autoComplete="off" spellcheck={false}
                  fieldClass="grow" placeholder={(fromTemplate && template?.from) || suggestedFrom || 'news@your-domain.com'}
                  hint={(fromTemplate && fromIt(template?.from, 'another address')) || (verified.length
                    ? <>At a verified domain: {verified.slice(0, 3).join(', ')}{verified.length > 3 ? ` and ${verified.length - 3} more` : ''}.</>
                    : domains.data ? <>No verified domain yet: <a href="/app/domains">verify one</a> to send.</> : 'At a verified domain of this project.')} />
                <datalist id="composer-from">{verified.map((d) => <option key={d} value={`news@${d}`} />)}</datalist>
                <TextField label="From name" value={form.fromName} onValue={set('fromName')} error={shown.fromName} fieldClass="grow"
                  placeholder={(fromTemplate && !form.from.trim() && template?.fromName) || 'Acme'} hint={(fromTemplate && !form.from.trim() && fromIt(template?.fromName, 'another')) || 'Optional.'} />
              </div>
              <TextField label="Reply-to" type="email" value={form.replyTo} onValue={set('replyTo')} error={shown.replyTo} spellcheck={false}
                placeholder={(fromTemplate && template?.replyTo) || 'support@your-domain.com'}
                hint={(fromTemplate && fromIt(template?.replyTo, 'another')) || 'Optional: where replies go instead of the From address.'} />
            </div>
          </section>

          <section class="card" aria-labelledby="composer-content">
            <div class="card-header"><h2 id="composer-content">Content</h2><span class="muted small">{fromTemplate ? 'A template, rendered for each contact' : 'HTML with Liquid, rendered for each contact'}</span></div>
            <div class="card-body form">
              <fieldset class="audience-choices content-choices">
                <legend class="visually-hidden">Where the message comes from</legend>
                <Choice name="content" value="own" checked={!fromTemplate} onChoose={() => chooseSource('own')}
                  label="Write it here" hint="An HTML body for this campaign only." />
                <Choice name="content" value="template" checked={fromTemplate} onChoose={() => chooseSource('template')}
                  label="Use a template" hint="One of this project's templates, as it is when the campaign goes: edits to it apply until then." />
              </fieldset>
              {fromTemplate ? (
                <TemplatePicker templates={templates.list} loading={templates.loading} value={form.templateId} onValue={set('templateId')} error={shown.templateId ?? shown.body} />
              ) : (
                <TextAreaField label="HTML body" mono rows={14} value={form.body} onValue={set('body')} error={shown.body} required
                  hint={<>Each contact's data is <code>{'{{ data.firstName }}'}</code>, their address <code>{'{{ email }}'}</code>. Herald adds the unsubscribe link and headers.</>} />
              )}
            </div>
          </section>

          <section class="card" aria-labelledby="composer-audience">
            <div class="card-header"><h2 id="composer-audience">Audience</h2></div>
            <div class="card-body form">
              <fieldset class="audience-choices">
                <legend class="visually-hidden">Who receives it</legend>
                <Choice name="audience" value="ALL" checked={form.audienceType === 'ALL'} onChoose={() => set('audienceType')('ALL')}
                  label="All subscribed contacts" hint="Everyone subscribed to this project's mail, except suppressed addresses." />
                <Choice name="audience" value="SEGMENT" checked={form.audienceType === 'SEGMENT'} onChoose={() => set('audienceType')('SEGMENT')}
                  label="A segment" hint="The subscribed members of one of your segments, as it is when the campaign goes." />
                <Choice name="audience" value="FILTERED" checked={form.audienceType === 'FILTERED'} onChoose={() => setForm((f) => ({ ...f, audienceType: 'FILTERED', filter: f.filter ?? newCondition() }))}
                  label="A filter" hint="Subscribed contacts that match conditions on their data, events and segments." />
              </fieldset>
              {form.audienceType === 'SEGMENT' ? (
                <SelectField label="Segment" value={form.segmentId} onValue={set('segmentId')} options={segmentOptions} error={shown.segmentId}
                  hint={segments.data && !segments.data.items.length ? <>This project has no segment yet: make one on the <a href="/app/segments">Segments</a> page.</> : undefined} />
              ) : null}
              {form.audienceType === 'FILTERED' ? <InlineFilter value={form.filter ?? newCondition()} onChange={set('filter')} fields={shown} /> : null}
              <p class="audience-count" aria-live="polite">{countLine}</p>
            </div>
          </section>

          <AbTestSection value={form.ab} onChange={set('ab')} errors={shown} templates={templates.list} templatesLoading={templates.loading}
            audience={counted.count.state === 'counted' ? counted.count.count : null}
            campaign={{
              subject: base.subject, previewText: form.previewText, fromName: base.fromName,
              body: fromTemplate ? (template?.bodyType === 'html' ? template.body : '') : form.body,
            }} />
        </div>

        <aside class="card composer-preview" aria-labelledby="composer-preview">
          <div class="card-header">
            <h2 id="composer-preview">Preview</h2>
            {view.kind === 'template' && rendered.busy && view.template ? <Spinner label="Rendering the preview" />
              : <span class="muted small">{view.kind === 'template' ? 'Rendered for a contact with no data' : 'Variables shown as written'}</span>}
          </div>
          {form.ab.on ? (
            <div class="card-body composer-preview-of">
              <span class="muted small" id="composer-preview-of">Variant</span>
              <div class="segmented" role="group" aria-labelledby="composer-preview-of">
                {form.ab.variants.map((_, i) => (
                  <button key={i} type="button" aria-pressed={i === shownIndex ? 'true' : 'false'} aria-label={`Preview variant ${VARIANT_LETTERS[i]}`}
                    onClick={() => setPreviewOf(i)}>{VARIANT_LETTERS[i]}</button>
                ))}
              </div>
            </div>
          ) : null}
          <dl class="kv card-body composer-envelope">
            <dt>From</dt><dd>{envelope.fromName ? `${envelope.fromName} <${envelope.from || '…'}>` : envelope.from || '—'}</dd>
            <dt>Subject</dt><dd>{envelope.subject || '—'}</dd>
            {envelope.previewText ? <><dt>Preview text</dt><dd class="muted">{envelope.previewText}</dd></> : null}
          </dl>
          {view.kind === 'own' ? <MessagePreview html={previewHtml} title={variant ? `Preview of variant ${VARIANT_LETTERS[shownIndex]}` : 'Preview of the campaign\'s message'} /> : null}
          {view.kind === 'template' && !view.template ? <p class="card-body muted small">Choose a template to see its message here.</p> : null}
          {view.kind === 'template' && view.template && rendered.error ? <div class="preview-error" role="alert"><Icon name="alert" size={14} /><span>{rendered.error}</span></div> : null}
          {view.kind === 'template' && view.template && rendered.preview ? <MessagePreview html={rendered.preview.html} title={`Preview of the template ${view.template.name}`} /> : null}
        </aside>
        <div class="composer-actions">
          <span class="composer-state muted small" aria-live="polite">{busy === 'save' ? 'Saving…' : dirty ? (id ? 'Unsaved changes' : 'Not saved yet') : 'All changes saved'}</span>
          <div class="row">
            <Button type="submit" busy={busy === 'save'} disabled={busy !== null && busy !== 'save'}>Save draft</Button>
            <Button onClick={() => setAsking({ what: 'test' })} disabled={busy !== null}><Icon name="emails" />Send test…</Button>
            <Button onClick={() => askToSend('schedule')} busy={busy === 'schedule'} disabled={busy !== null && busy !== 'schedule'}><Icon name="clock" />Schedule…</Button>
            <Button variant="primary" onClick={() => askToSend('send')} busy={busy === 'send'} disabled={busy !== null && busy !== 'send'}><Icon name="send" />Send now…</Button>
          </div>
        </div>
      </form>

      <TestDialog open={asking?.what === 'test'} defaultTo={me.user.email} onClose={() => setAsking(null)} save={save}
        variants={form.ab.on ? form.ab.variants.map((v) => v.name.trim()) : []} />
      <ScheduleDialog open={asking?.what === 'schedule'} count={askedCount} onClose={() => setAsking(null)} test={testLine}
        schedule={async (at) => {
          const c = await call(api.POST('/campaigns/{id}/send', { params: { path: { id: id! } }, body: { scheduledAt: at } }), { form: true });
          toast(`Scheduled for ${formatWhen(c.scheduledAt ?? at)}`);
          onSent(c);
        }} />
      <ConfirmDialog open={asking?.what === 'send'} title={testLine ? `Send the A/B test to ${contacts(askedCount)} now?` : `Send to ${contacts(askedCount)} now?`} confirm="Send now"
        onClose={() => setAsking(null)} onConfirm={sendNow}>
        “{form.name.trim() || 'This campaign'}” goes at once to {audiencePhrase(form, segmentName)}
        {askedCount === 0 ? ': nobody is in this audience now, so no email will leave' : testLine ? <>. <strong>{testLine}</strong></> : ''}. Emails that have not left yet can still be cancelled.
      </ConfirmDialog>
      <ConfirmDialog open={asking?.what === 'delete'} title={`Delete the draft “${title}”?`} confirm="Delete draft" danger onClose={() => setAsking(null)}
        onConfirm={async () => {
          await call(api.DELETE('/campaigns/{id}', { params: { path: { id: id! } } }));
          toast('Draft deleted');
          onDeleted();
        }}>
        Its content and audience are gone for good. Nothing was sent from it.
      </ConfirmDialog>
    </Page>
  );
}

/** "Send test": the addresses (the signed-in person's by default), the campaign saved first, [TEST] copies sent. */
function TestDialog({ open, defaultTo, onClose, save, variants }: {
  open: boolean; defaultTo: string; onClose: () => void; save: () => Promise<Campaign | null>;
  /** An A/B campaign's variants (their names, '' for none): a copy of each, or of the one chosen. */
  variants: string[];
}) {
  const [to, setTo] = useState(defaultTo);
  const [which, setWhich] = useState('');
  const [fieldError, setFieldError] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => { if (open) { setFieldError(''); setError(''); } }, [open]);
  // A variant removed since it was chosen: every variant again.
  const variant = which && VARIANT_LETTERS.indexOf(which as (typeof VARIANT_LETTERS)[number]) < variants.length ? which as (typeof VARIANT_LETTERS)[number] : '';

  const send = async () => {
    const emails = to.split(/[\s,;]+/).map((e) => e.trim()).filter(Boolean);
    if (!emails.length) { setFieldError('Give at least one address'); return; }
    if (emails.length > 10) { setFieldError('At most 10 addresses'); return; }
    setBusy(true);
    setFieldError('');
    setError('');
    try {
      const c = await save();
      if (!c) { setError('The campaign could not be saved: fix it first, then send the test.'); return; }
      await call(api.POST('/campaigns/{id}/test', { params: { path: { id: c.id } }, body: { emails, ...(variant ? { variant } : {}) } }), { form: true });
      const what = !variants.length ? 'Test' : variant ? `Test of variant ${variant}` : `Tests of ${keysPhrase(variants.length).replace(' or ', ' and ')}`;
      toast(`${what} sent to ${emails.join(', ')}`);
      onClose();
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      const onAddress = Object.entries(f).find(([k]) => k.startsWith('emails'));
      if (onAddress) setFieldError(onAddress[1]);
      else setError(Object.values(f)[0] ?? (err instanceof Error ? err.message : 'The test was not sent.'));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog open={open} title="Send a test" onClose={onClose} onSubmit={send}
      lede="A copy marked [TEST] goes to each address, rendered as for a contact (with their data when the address is one). The campaign is saved first; nothing else changes."
      actions={<><Button onClick={onClose} disabled={busy}>Cancel</Button><Button type="submit" variant="primary" busy={busy}><Icon name="send" />Send test</Button></>}>
      <FormError>{error}</FormError>
      <TextField label="Send to" value={to} onValue={setTo} error={fieldError} autoComplete="email" spellcheck={false}
        hint="Up to 10 addresses, separated by commas or spaces." />
      {variants.length ? (
        <SelectField label="Variant" value={variant} onValue={setWhich}
          options={[['', `Each variant (${keysPhrase(variants.length).replace(' or ', ' and ')}): one copy of each`],
            ...variants.map((name, i): [string, string] => [VARIANT_LETTERS[i]!, `Variant ${VARIANT_LETTERS[i]}${name ? `: ${name}` : ''} only`])]}
          hint="Each copy’s subject says which it is: [TEST B] …" />
      ) : null}
    </Dialog>
  );
}

/** "Schedule": a time in the viewer's zone (shown), sent as the UTC instant; the dialog says how many it reaches now. */
function ScheduleDialog({ open, count, onClose, schedule, test }: {
  open: boolean; count: number; onClose: () => void; schedule: (iso: string) => Promise<void>;
  /** An A/B test's sentence at this audience ("20 % test: …"), or ''. */
  test: string;
}) {
  const [value, setValue] = useState(() => localInput(nextHour()));
  const [fieldError, setFieldError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => { if (open) { setValue(localInput(nextHour())); setFieldError(''); } }, [open]);
  const parsed = value ? new Date(value) : null; // a datetime-local value without offset is the viewer's local time
  const at = parsed && !Number.isNaN(parsed.getTime()) ? parsed : null;

  const submit = async () => {
    if (!at) { setFieldError('Choose a date and a time'); return; }
    if (at.getTime() <= Date.now()) { setFieldError('Choose a time in the future (or send it now)'); return; }
    setBusy(true);
    setFieldError('');
    try {
      await schedule(at.toISOString());
      onClose();
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      setFieldError(f.scheduledAt ?? Object.values(f)[0] ?? (err instanceof Error ? err.message : 'Not scheduled'));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog open={open} title={`Schedule the send to ${contacts(count)}`} onClose={onClose} onSubmit={submit}
      lede={<>{contacts(count)} would receive it now; the audience is read again when it goes, so whoever subscribes or leaves meanwhile counts then.{test ? <> At today’s size, a {test}.</> : null}</>}
      actions={<><Button onClick={onClose} disabled={busy}>Cancel</Button><Button type="submit" variant="primary" busy={busy}><Icon name="clock" />Schedule</Button></>}>
      <TextField label="Send at" type="datetime-local" value={value} onValue={setValue} error={fieldError} min={localInput(new Date())} required
        hint={<>Your time zone: <strong>{viewerZone()}</strong>{at ? ` (${zoneOffset(at)})` : ''}.{at ? <> That is {formatWhen(at)}.</> : null}</>} />
    </Dialog>
  );
}
