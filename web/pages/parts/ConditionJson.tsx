import { useEffect, useState } from 'preact/hooks';
import type { Schemas } from '../../api';
import { TextAreaField } from '../../components';

/**
 * An audience condition written as JSON (the API's own shape: `{ logic, groups: [{ filters: [{ field, operator,
 * value }] }] }`): for whoever knows the shape, and for any condition the API takes. It has the props of the condition
 * builder (`value`, `onChange`, `disabled`), plus the API's complaint about the condition (`error`: a 422's field
 * messages under the condition's path, e.g. "groups.0.filters.0.operator: …").
 *
 * The text is the person's: it is parsed as they type, and `onChange` gets the condition each time it parses (null
 * while it does not, with the reason under the field). The API checks the rest (fields, operators, values).
 */
export type AudienceCondition = NonNullable<Schemas['Campaign']['audienceFilter']>;

export const EXAMPLE_CONDITION: AudienceCondition = {
  logic: 'AND',
  groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }],
};

const text = (c: AudienceCondition | null) => (c ? JSON.stringify(c, null, 2) : '');

export function ConditionJson({ value, onChange, disabled, error, label = 'Condition (JSON)' }: {
  value: AudienceCondition | null; onChange: (condition: AudienceCondition | null) => void; disabled?: boolean; error?: string; label?: string;
}) {
  const [draft, setDraft] = useState(() => text(value));
  const [parseError, setParseError] = useState('');
  // A condition set from outside (a saved campaign loaded) replaces the text, unless it is what the text already says.
  useEffect(() => {
    try {
      if (JSON.stringify(JSON.parse(draft)) === JSON.stringify(value)) return;
    } catch { /* the text does not parse: it is replaced */ }
    if (value) { setDraft(text(value)); setParseError(''); }
  }, [value]);

  const edit = (next: string) => {
    setDraft(next);
    if (!next.trim()) { setParseError('Write a condition, e.g. the example below'); onChange(null); return; }
    try {
      const parsed: unknown = JSON.parse(next);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('a condition is a JSON object');
      setParseError('');
      onChange(parsed as AudienceCondition);
    } catch (err) {
      setParseError(`Not valid JSON yet: ${err instanceof Error ? err.message : String(err)}`);
      onChange(null);
    }
  };

  return (
    <TextAreaField label={label} mono rows={9} value={draft} onValue={edit} disabled={disabled} error={parseError || error}
      hint={<>Contacts match when <code>logic</code> joins the groups (AND, OR) and every filter of a group holds, e.g. <code>{JSON.stringify(EXAMPLE_CONDITION)}</code>. Fields are <code>email</code>, <code>subscribed</code>, <code>createdAt</code>, <code>data.*</code>, <code>event.*</code> and <code>segment.*</code>: see <a href="/docs/guide#audience-filters">audience filters</a>.</>} />
  );
}
