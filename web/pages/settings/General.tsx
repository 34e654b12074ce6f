import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiFailure, call, type Schemas } from '../../api';
import { Badge, Button, Checkbox, EmptyState, Loading, TextField, toast } from '../../components';
import { useLoad } from '../../hooks';
import { useSession } from '../../session';

type Settings = Schemas['Settings'];

const onOff = (on: boolean) => <Badge tone={on ? 'success' : 'neutral'}>{on ? 'On' : 'Off'}</Badge>;

/** General: the project's name, its tracking defaults and the two-factor requirement (GET/PATCH /settings). */
export function General() {
  const { can, project, me, refresh } = useSession();
  const loaded = useLoad(() => call(api.GET('/settings')), []);
  const [draft, setDraft] = useState<Settings | null>(null);
  const [saving, setSaving] = useState(false);
  const [nameError, setNameError] = useState<string | undefined>();
  useEffect(() => { if (loaded.data) setDraft(loaded.data); }, [loaded.data]);

  if (loaded.error && !loaded.data) {
    return <EmptyState icon="alert" title="The settings did not load" actions={<Button onClick={loaded.reload}>Try again</Button>}>{loaded.error.message}</EmptyState>;
  }
  // Loading, or loaded with the form's copy not made yet (the effect above runs after this render): not a failure.
  if (!loaded.data || !draft) return <Loading what="Loading the settings" />;
  const saved = loaded.data;
  const edit = can('admin');
  const changed = JSON.stringify(draft) !== JSON.stringify(saved);
  const track = (kind: 'send' | 'campaigns', what: 'opens' | 'clicks', on: boolean) =>
    setDraft({ ...draft, tracking: { ...draft.tracking, [kind]: { ...draft.tracking[kind], [what]: on } } });

  const save = async (e: Event) => {
    e.preventDefault();
    setSaving(true);
    try {
      const body: { name?: string; tracking?: Settings['tracking']; requireTwoFactor?: boolean } = {};
      if (draft.name.trim() !== saved.name) body.name = draft.name.trim();
      if (JSON.stringify(draft.tracking) !== JSON.stringify(saved.tracking)) body.tracking = draft.tracking;
      if (draft.requireTwoFactor !== saved.requireTwoFactor) body.requireTwoFactor = draft.requireTwoFactor;
      setNameError(undefined);
      const next = await call(api.PATCH('/settings', { body }), { form: true });
      setDraft(next);
      loaded.reload();
      // The project switcher and the side bar name the project: read the session again when the name changed.
      if (body.name !== undefined) await refresh();
      toast('Settings saved');
    } catch (err) {
      if (err instanceof ApiFailure) {
        if (err.fields.name) setNameError(err.fields.name);
        else toast.error(err.message);
      }
    } finally {
      setSaving(false);
    }
  };

  const choices: [kind: 'send' | 'campaigns', title: string, hint: ComponentChildren][] = [
    ['send', 'Transactional emails', <>Emails sent through POST /v1/send and SMTP; a send may still ask otherwise with its own <code>tracking</code> field.</>],
    ['campaigns', 'Campaigns', 'Emails of a campaign to a segment; a campaign may still ask otherwise.'],
  ];

  return (
    <form class="stack" onSubmit={save}>
      <section class="card" aria-labelledby="settings-project">
        <div class="card-header"><h2 id="settings-project">Project</h2></div>
        <div class="card-body stack">
          {edit ? (
            <TextField label="Project name" value={draft.name} onValue={(name) => setDraft({ ...draft, name })} error={nameError} maxLength={100} required />
          ) : null}
          <dl class="kv">
            {edit ? null : <><dt>Name</dt><dd>{saved.name}</dd></>}
            <dt>Project id</dt><dd class="mono">{project?.projectId}</dd>
            <dt>Your role</dt><dd>{project?.role}</dd>
          </dl>
        </div>
      </section>

      <section class="card" aria-labelledby="settings-tracking">
        <div class="card-header"><h2 id="settings-tracking">Tracking</h2></div>
        <div class="card-body settings-tracking">
          <p class="muted settings-note">Opens are counted with an invisible image, clicks by sending links through Herald first. These are the defaults when a send does not say.</p>
          {choices.map(([kind, title, hint]) => (
            <fieldset key={kind} class="settings-choice">
              <legend>{title}</legend>
              {edit ? (
                <>
                  <Checkbox label="Track opens" checked={draft.tracking[kind].opens} onChecked={(on) => track(kind, 'opens', on)} />
                  <Checkbox label="Track clicks" checked={draft.tracking[kind].clicks} onChecked={(on) => track(kind, 'clicks', on)} />
                </>
              ) : (
                <dl class="kv">
                  <dt>Opens</dt><dd>{onOff(saved.tracking[kind].opens)}</dd>
                  <dt>Clicks</dt><dd>{onOff(saved.tracking[kind].clicks)}</dd>
                </dl>
              )}
              <p class="field-hint">{hint}</p>
            </fieldset>
          ))}
        </div>
      </section>

      <section class="card" aria-labelledby="settings-security">
        <div class="card-header"><h2 id="settings-security">Security</h2></div>
        <div class="card-body">
          {edit ? (
            <Checkbox label="Require two-factor authentication of every member" checked={draft.requireTwoFactor}
              onChecked={(on) => setDraft({ ...draft, requireTwoFactor: on })}
              disabled={!me.twoFactor.enabled && !saved.requireTwoFactor}
              hint={me.twoFactor.enabled || saved.requireTwoFactor
                ? 'Members without two-factor are refused on this project until they turn it on. API keys are not concerned.'
                : <>Turn on your own two-factor first (in <a href="/app/settings/account">Your account</a>): requiring it without it would lock you out.</>} />
          ) : (
            <dl class="kv"><dt>Two-factor required of members</dt><dd>{onOff(saved.requireTwoFactor)}</dd></dl>
          )}
        </div>
      </section>

      {edit ? (
        <div class="settings-save">
          {changed ? <span class="muted">You have unsaved changes.</span> : null}
          <Button onClick={() => setDraft(saved)} disabled={!changed || saving}>Discard</Button>
          <Button type="submit" variant="primary" busy={saving} disabled={!changed}>Save changes</Button>
        </div>
      ) : (
        <p class="muted settings-note">Only admins and owners change these settings.</p>
      )}
    </form>
  );
}
