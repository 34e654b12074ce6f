import { useId, useState } from 'preact/hooks';
import type { Schemas } from '../../api';
import { Icon, Loading, TextField } from '../../components';
import { TemplateTypeBadge } from './templates';

type Template = Schemas['Template'];

/**
 * "Use a template": the project's templates as radio buttons (arrows move the choice, as in any radio group), each with
 * its name, type and subject, a search over names and subjects once there are more than a few, and the chosen one's
 * link to its editor. A draft's template that is gone (or one past the first 500) is said so.
 */
export function TemplatePicker({ templates, loading, value, onValue, error }: {
  templates: Template[]; loading: boolean; value: string; onValue: (id: string) => void; error?: string;
}) {
  const id = useId();
  const [search, setSearch] = useState('');
  const q = search.trim().toLowerCase();
  const shown = q ? templates.filter((t) => t.name.toLowerCase().includes(q) || t.subject.toLowerCase().includes(q)) : templates;
  const chosen = templates.find((t) => t.id === value);
  if (loading && !templates.length) return <Loading what="Loading the templates" />;
  if (!templates.length) {
    return (
      <div class="template-picker">
        <p class="template-none">This project has no template yet. <a href="/app/templates/new">Create a template</a>, then choose it here.</p>
        {error ? <div class="field-error"><Icon name="alert" size={14} /><span>{error}</span></div> : null}
      </div>
    );
  }
  return (
    <div class="template-picker">
      {templates.length > 4 ? <TextField label="Find a template" type="search" value={search} onValue={setSearch} placeholder="Name or subject" autoComplete="off" /> : null}
      <fieldset class="template-options" aria-describedby={error ? `${id}-error` : undefined}>
        <legend class="field-label">Template</legend>
        {shown.map((t) => (
          <label class="template-option" key={t.id}>
            <input type="radio" name={`${id}-template`} value={t.id} checked={t.id === value} onChange={() => onValue(t.id)} aria-invalid={error ? 'true' : undefined} />
            <span class="template-option-text">
              <span class="template-option-name"><strong>{t.name}</strong><TemplateTypeBadge type={t.type} /></span>
              <span class="template-option-subject">{t.subject}</span>
            </span>
          </label>
        ))}
        {!shown.length ? <p class="muted small">No template’s name or subject has “{search.trim()}”.</p> : null}
      </fieldset>
      {error ? <div class="field-error" id={`${id}-error`}><Icon name="alert" size={14} /><span>{error}</span></div> : null}
      {value && !chosen ? <p class="field-hint">The template this draft used is not in this project’s list any more: choose another.</p> : null}
      {chosen ? (
        <p class="template-chosen">
          <a href={`/app/templates/${chosen.id}`}><Icon name="templates" size={14} />Edit “{chosen.name}”</a>
          <span class="muted">Its changes apply to this campaign until it is sent.</span>
        </p>
      ) : null}
    </div>
  );
}
