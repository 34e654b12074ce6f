import { useEffect, useMemo, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { api, ApiFailure, call, type Schemas } from '../api';
import {
  Badge, Button, ConfirmDialog, Dialog, EmptyState, FormError, Icon, Loading, MessagePreview, Page, SelectField, Spinner, TextAreaField, TextField, Time, toast,
} from '../components';
import { useLeaveGuard, useLoad } from '../hooks';
import { useSession } from '../session';
import { CodeEditor } from './parts/CodeEditor';
import { ContactPicker } from './parts/ContactPicker';
import { parseData } from './parts/contacts';
import { FORMAT_OPTIONS, PART_WORDS, TemplateTypeBadge, TYPE_OPTIONS, usePreview, type BodyType, type TemplateType } from './parts/templates';
import { NotLoaded } from './parts/NotLoaded';

/**
 * A template's editor (issue 29), new (`/app/templates/new`) or saved (`/app/templates/:id`): its fields, the body in
 * HTML or Markdown with Liquid (CodeMirror, in this page's chunk only), and beside it a live preview rendered by
 * Herald (POST /templates/preview: the renderer and budgets of a send) for a chosen contact and variables, its
 * subject above the message; a syntax error or a passed budget is the API's message, shown by the preview. Save
 * (POST, then PATCH of what changed), delete after a confirmation, send a test to yourself (POST /templates/:id/test),
 * and a question before leaving with unsaved changes. A viewer reads and previews; nothing that changes is offered.
 */
type Template = Schemas['Template'];
type Contact = Schemas['Contact'];

interface Draft {
  name: string;
  description: string;
  subject: string;
  body: string;
  bodyType: BodyType;
  type: TemplateType;
  from: string;
  fromName: string;
  replyTo: string;
}

const BLANK: Draft = { name: '', description: '', subject: '', body: '', bodyType: 'html', type: 'TRANSACTIONAL', from: '', fromName: '', replyTo: '' };

const draftOf = (t: Template): Draft => ({
  name: t.name, description: t.description ?? '', subject: t.subject, body: t.body, bodyType: t.bodyType as BodyType, type: t.type as TemplateType,
  from: t.from ?? '', fromName: t.fromName ?? '', replyTo: t.replyTo ?? '',
});

/** A draft as the API stores it: an empty optional field is null. */
const stored = (d: Draft) => ({
  name: d.name.trim(), description: d.description.trim() || null, subject: d.subject, body: d.body, bodyType: d.bodyType, type: d.type,
  from: d.from.trim() || null, fromName: d.fromName.trim() || null, replyTo: d.replyTo.trim() || null,
});
type Stored = ReturnType<typeof stored>;

/** What a PATCH must carry to turn `was` into `now`. */
function changes(was: Stored, now: Stored): Partial<Stored> {
  return Object.fromEntries(Object.entries(now).filter(([k, v]) => was[k as keyof Stored] !== v)) as Partial<Stored>;
}

function SendTest({ open, onClose, template, contact, data, before }: {
  open: boolean; onClose: () => void; template: Template; contact: Contact | null; data: Record<string, unknown> | undefined;
  /** Saves unsaved changes first: the test is of the saved template. */
  before?: () => Promise<boolean>;
}) {
  const { me } = useSession();
  const [to, setTo] = useState('');
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => { if (open) { setTo(me.user.email); setFields({}); setError(''); } }, [open]);

  const send = async () => {
    const addresses = to.split(/[\s,;]+/).map((a) => a.trim()).filter(Boolean);
    setBusy(true);
    setFields({});
    setError('');
    try {
      if (before && !(await before())) { setError('The changes could not be saved: see the form.'); return; }
      const sent = await call(api.POST('/templates/{id}/test', { params: { path: { id: template.id } }, body: {
        ...(addresses.length ? { to: addresses } : {}), ...(contact ? { contactId: contact.id } : {}), ...(data && Object.keys(data).length ? { data } : {}),
      } }), { form: true });
      toast(`Test sent to ${sent.emails.map((e) => e.email).join(', ')}`);
      onClose();
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      const toError = Object.entries(f).find(([k]) => k === 'to' || k.startsWith('to.'))?.[1];
      if (toError) setFields({ to: toError });
      const rest = Object.entries(f).filter(([k]) => k !== 'to' && !k.startsWith('to.'));
      if (rest.length) setError(rest.map(([k, m]) => `${k === 'from' ? 'From' : PART_WORDS[k] ?? k}: ${m}`).join(' · ') + (err instanceof ApiFailure && err.suggestion ? `. ${err.suggestion}` : ''));
      else if (!toError) setError(err instanceof Error ? err.message : 'The test was not sent.');
    } finally {
      setBusy(false);
    }
  };

  const renderedFor = contact ? <>for <strong>{contact.email}</strong></> : <>for a recipient with no contact data</>;
  return (
    <Dialog open={open} title="Send a test" onClose={onClose} onSubmit={send} wide
      lede={<>A <strong>[TEST]</strong> copy of the saved template, rendered {renderedFor}{data && Object.keys(data).length ? ' with the preview’s variables' : ''}, from {template.from ?? 'the template’s sender'}{before ? '. Your changes are saved first.' : '.'}</>}
      actions={<>
        <Button onClick={onClose} disabled={busy}>Cancel</Button>
        <Button type="submit" variant="primary" busy={busy}><Icon name="emails" />{before ? 'Save and send test' : 'Send test'}</Button>
      </>}>
      <FormError>{error}</FormError>
      <TextField label="To" type="text" inputMode="email" autoComplete="email" spellcheck={false} value={to} onValue={setTo} error={fields.to}
        hint="Up to 10 addresses, separated by commas. Delivered like any email; no contact is created." />
    </Dialog>
  );
}

export default function TemplateEditor() {
  const { params } = useRoute();
  const { route } = useLocation();
  const { can } = useSession();
  const id = params.id === 'new' ? undefined : params.id;
  const isNew = !id;
  const editable = can('write');

  const loaded = useLoad(() => (id ? call(api.GET('/templates/{id}', { params: { path: { id } } }), { expect: [404] }) : Promise.resolve(undefined)), [id]);
  const [template, setTemplate] = useState<Template | undefined>(undefined);
  const [draft, setDraft] = useState<Draft>(BLANK);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState('');
  const [saving, setSaving] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [testing, setTesting] = useState(false);
  const [contact, setContact] = useState<Contact | null>(null);
  const [dataText, setDataText] = useState('{\n  \n}');

  useEffect(() => {
    // The GET begun when a new template's first save moved the page to its URL answers what that save (or a later one)
    // already shows: it must not reset the draft typed since.
    if (loaded.data && template?.id === loaded.data.id && Date.parse(loaded.data.updatedAt) <= Date.parse(template.updatedAt)) return;
    if (loaded.data) { setTemplate(loaded.data); setDraft(draftOf(loaded.data)); setFields({}); setFormError(''); }
    else if (isNew) { setTemplate(undefined); setDraft(BLANK); }
  }, [loaded.data, isNew]);

  const saved = template ? stored(draftOf(template)) : stored(BLANK);
  const now = stored(draft);
  const dirty = editable && Object.keys(changes(saved, now)).length > 0;
  const guard = useLeaveGuard(dirty);

  const data = parseData(dataText);
  const dataValue = 'value' in data ? data.value : undefined;
  const previewInput = useMemo(() => ((isNew || template) && 'value' in data
    ? { subject: draft.subject, body: draft.body, bodyType: draft.bodyType, ...(contact ? { contactId: contact.id } : {}), ...(Object.keys(data.value).length ? { data: data.value } : {}) }
    : null), [isNew, template, draft.subject, draft.body, draft.bodyType, contact, dataText]);
  const preview = usePreview(previewInput);

  const set = <K extends keyof Draft>(k: K) => (v: Draft[K]) => { setDraft((d) => ({ ...d, [k]: v })); setFields(({ [k]: _gone, ...rest }) => rest); };

  /** Saves the draft; answers whether it is saved (the form shows why not). */
  const save = async (): Promise<boolean> => {
    if (!editable) return false;
    if (!dirty && template) return true;
    setSaving(true);
    setFields({});
    setFormError('');
    try {
      if (!template) {
        const made = await call(api.POST('/templates', { body: now }), { form: true });
        setTemplate(made);
        setDraft(draftOf(made));
        toast(`Template “${made.name}” created`);
        route(`/app/templates/${made.id}`, true);
      } else {
        const patch = changes(saved, now);
        const updated = await call(api.PATCH('/templates/{id}', { params: { path: { id: template.id } }, body: patch }), { form: true });
        setTemplate(updated);
        setDraft(draftOf(updated));
        toast('Template saved');
      }
      return true;
    } catch (err) {
      const f = err instanceof ApiFailure ? err.fields : {};
      setFields(f);
      const known = ['name', 'description', 'subject', 'body', 'bodyType', 'type', 'from', 'fromName', 'replyTo'];
      const other = Object.entries(f).filter(([k]) => !known.includes(k));
      setFormError(other.length ? other.map(([k, m]) => `${k}: ${m}`).join(' · ') : Object.keys(f).length ? '' : err instanceof Error ? err.message : 'The template was not saved.');
      return false;
    } finally {
      setSaving(false);
    }
  };

  const breadcrumb = <a href="/app/templates"><Icon name="arrowLeft" size={14} />Templates</a>;
  if (loaded.error) {
    return <NotLoaded error={loaded.error} thing="template" title="Template" icon="templates" breadcrumb={breadcrumb} back={{ href: '/app/templates', label: 'Back to templates' }} />;
  }
  if (!isNew && !template) return <Page title="Template" breadcrumb={breadcrumb}><Loading what="Loading the template" /></Page>;
  if (isNew && !editable) {
    return (
      <Page title="New template" breadcrumb={breadcrumb}>
        <EmptyState icon="lock" title="Your role cannot create templates" actions={<Button onClick={() => route('/app/templates')}>Back to templates</Button>}>
          Viewers read and preview templates. Ask an admin of the project for the member role to write them.
        </EmptyState>
      </Page>
    );
  }

  const title = template ? (draft.name.trim() || template.name) : 'New template';
  const lede = (
    <span class="row">
      <TemplateTypeBadge type={draft.type} />
      {template ? <span class="muted">Updated <Time value={template.updatedAt} relative /></span> : <span class="muted">Not saved yet</span>}
      {dirty && template ? <Badge tone="warning">Unsaved changes</Badge> : null}
      {!editable ? <span class="muted">Read-only: your role can preview, not edit</span> : null}
    </span>
  );
  const actions = editable || (template && can('send')) ? <>
    {template && can('send') ? <Button onClick={() => setTesting(true)}><Icon name="emails" />Send test</Button> : null}
    {template && editable ? <Button variant="danger" onClick={() => setDeleting(true)}><Icon name="trash" />Delete</Button> : null}
    {editable ? <Button variant="primary" busy={saving} disabled={!dirty && Boolean(template)} onClick={() => void save()}>{template ? 'Save' : 'Create template'}</Button> : null}
  </> : null;

  return (
    <Page title={title} breadcrumb={breadcrumb} lede={lede} actions={actions}>
      {/* Ctrl/Cmd+S saves, in any field and in the body's editor (its keys reach here from its shadow root). The
          cards are the grid's own items: on a narrow screen the preview comes right after the content. */}
      {formError ? <div class="template-form-error"><FormError>{formError}</FormError></div> : null}
      <div class="template-editor" onKeyDown={(e) => { if ((e.ctrlKey || e.metaKey) && e.key === 's') { e.preventDefault(); void save(); } }}>
        <section class="card template-content" aria-labelledby="template-content">
          <div class="card-header"><h2 id="template-content">Content</h2></div>
          <div class="card-body stack">
            <div class="template-fields">
              <TextField label="Name" fieldClass="grow" required readOnly={!editable} value={draft.name} onValue={set('name')} error={fields.name} placeholder={editable ? 'Password reset' : undefined} autoComplete="off" />
              <SelectField label="Type" disabled={!editable} value={draft.type} onValue={(v) => set('type')(v as TemplateType)} options={TYPE_OPTIONS} error={fields.type} />
            </div>
            <TextField label="Subject" required readOnly={!editable} value={draft.subject} onValue={set('subject')} error={fields.subject} placeholder={editable ? 'Reset your password, {{ data.firstName }}' : undefined} autoComplete="off" spellcheck />
            <div class="field">
              <div class="field-label-row">
                <span class="field-label">Body</span>
                <div class="segmented" role="group" aria-label="Format">
                  {FORMAT_OPTIONS.map(([format, words]) => (
                    <button key={format} type="button" aria-pressed={draft.bodyType === format ? 'true' : 'false'} disabled={!editable} onClick={() => set('bodyType')(format)}>{words}</button>
                  ))}
                </div>
              </div>
              <CodeEditor value={draft.body} resetKey={template?.id} onChange={set('body')} language={draft.bodyType} label={`Body (${draft.bodyType === 'markdown' ? 'Markdown' : 'HTML'})`}
                readOnly={!editable} invalid={Boolean(fields.body)}
                placeholder={editable ? (draft.bodyType === 'markdown' ? '# Hello {{ data.firstName }}' : '<p>Hello {{ data.firstName }}</p>') : undefined} />
              {fields.body || fields.bodyType
                ? <div class="field-error" role="alert"><Icon name="alert" size={14} /><span>{fields.body ?? fields.bodyType}</span></div>
                : <div class="field-hint">The contact’s <code>{'{{ email }}'}</code> and <code>{'{{ data.plan }}'}</code>, a send’s data as <code>{'{{ orderId }}'}</code>, <code>{'{{ unsubscribeUrl }}'}</code>; tags like <code>{'{% if %}'}</code> and filters like <code>{'{{ name | default: "friend" }}'}</code>.</div>}
            </div>
          </div>
        </section>

        <section class="card template-preview" aria-labelledby="template-preview-title">
          <div class="card-header">
            <h2 id="template-preview-title">Preview</h2>
            {preview.busy && previewInput ? <Spinner label="Rendering the preview" /> : <span class="muted small">Rendered by Herald, as it is sent</span>}
          </div>
          <div class="card-body template-preview-for">
            <ContactPicker label="Contact" value={contact} onValue={setContact} hint={contact ? undefined : 'Without one: a recipient with no data (recipient@example.com).'} />
            <TextAreaField label="Variables (JSON)" mono rows={3} value={dataText} onValue={setDataText} error={'error' in data ? data.error : undefined}
              hint={<>The <code>data</code> of a send: <code>{'{"orderId": "A-1024"}'}</code> fills <code>{'{{ orderId }}'}</code>.</>} />
          </div>
          {preview.error ? <div class="preview-error" role="alert"><Icon name="alert" size={14} /><span>{preview.error}</span></div> : null}
          {preview.preview ? (
            <div class={preview.error ? 'is-stale' : undefined}>
              <dl class="preview-subject">
                <dt>Subject</dt>
                <dd>{preview.preview.subject || <span class="muted">(no subject)</span>}</dd>
              </dl>
              <MessagePreview html={preview.preview.html} title={`Preview of ${title}`} />
            </div>
          ) : preview.error ? null : <Loading what="Rendering the preview" />}
        </section>

        <section class="card template-sender" aria-labelledby="template-sender">
          <div class="card-header"><h2 id="template-sender">Sender and notes</h2></div>
          <div class="card-body template-sender-fields">
            <TextField label="From" type="email" readOnly={!editable} value={draft.from} onValue={set('from')} error={fields.from} placeholder={editable ? 'hello@example.com' : undefined} autoComplete="off" spellcheck={false}
              hint="At a verified domain; a send may name its own." />
            <TextField label="From name" readOnly={!editable} value={draft.fromName} onValue={set('fromName')} error={fields.fromName} placeholder={editable ? 'Acme' : undefined} autoComplete="off" />
            <TextField label="Reply-To" type="email" readOnly={!editable} value={draft.replyTo} onValue={set('replyTo')} error={fields.replyTo} placeholder={editable ? 'support@example.com' : undefined} autoComplete="off" spellcheck={false} />
            <TextField label="Description" readOnly={!editable} value={draft.description} onValue={set('description')} error={fields.description} placeholder={editable ? 'When it is sent, for your team' : undefined} autoComplete="off" />
          </div>
        </section>
      </div>

      {template ? (
        <ConfirmDialog open={deleting} title={`Delete ${template.name}?`} confirm="Delete template" danger onClose={() => setDeleting(false)}
          onConfirm={async () => {
            await call(api.DELETE('/templates/{id}', { params: { path: { id: template.id } } }));
            toast(`Template “${template.name}” deleted`);
            route('/app/templates');
          }}>
          Sends that name this template by id will fail with a 422 from now on. Emails already sent or queued keep their own copy. This cannot be undone.
        </ConfirmDialog>
      ) : null}
      {template && can('send') ? (
        <SendTest open={testing} onClose={() => setTesting(false)} template={template} contact={contact} data={dataValue} before={dirty ? save : undefined} />
      ) : null}
      <ConfirmDialog open={guard.pending !== null} title="Leave without saving?" confirm="Leave without saving" danger onClose={guard.stay} onConfirm={guard.leave}>
        Your changes to this template are not saved. They are lost if you leave now.
      </ConfirmDialog>
    </Page>
  );
}
