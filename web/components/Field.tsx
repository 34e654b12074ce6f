import type { ComponentChildren, JSX } from 'preact';
import { useId } from 'preact/hooks';
import { Icon } from './icons';

/**
 * A form field: its visible label, the control, and under it a hint or the error line (a 422's message for this
 * field, from `ApiFailure.fields`). The control is told it is invalid (aria-invalid) and described by the line.
 */
interface FieldProps {
  label: string;
  error?: string;
  hint?: ComponentChildren;
  /** Beside the label, right-aligned (e.g. "Forgot password?"). */
  aside?: ComponentChildren;
  class?: string;
  children: (control: { id: string; 'aria-invalid'?: 'true'; 'aria-describedby'?: string }) => ComponentChildren;
}

export function Field({ label, error, hint, aside, class: cls, children }: FieldProps) {
  const id = useId();
  const described = error ? `${id}-error` : hint ? `${id}-hint` : undefined;
  return (
    <div class={`field${cls ? ` ${cls}` : ''}`}>
      <div class="field-label-row">
        <label class="field-label" for={id}>{label}</label>
        {aside}
      </div>
      {children({ id, ...(error ? { 'aria-invalid': 'true' } : {}), ...(described ? { 'aria-describedby': described } : {}) })}
      {error
        ? <div class="field-error" id={`${id}-error`}><Icon name="alert" size={14} /><span>{error}</span></div>
        : hint ? <div class="field-hint" id={`${id}-hint`}>{hint}</div> : null}
    </div>
  );
}

type InputProps = Omit<JSX.InputHTMLAttributes<HTMLInputElement>, 'label' | 'onInput'> & {
  label: string;
  value: string;
  onValue: (value: string) => void;
  error?: string;
  hint?: ComponentChildren;
  aside?: ComponentChildren;
  fieldClass?: string;
};

/** A text-like input in a Field. */
export function TextField({ label, value, onValue, error, hint, aside, fieldClass, ...rest }: InputProps) {
  return (
    <Field label={label} error={error} hint={hint} aside={aside} class={fieldClass}>
      {(control) => <input class="input" {...rest} {...control} value={value} onInput={(e) => onValue(e.currentTarget.value)} />}
    </Field>
  );
}

/** A select in a Field; `options` are [value, words]. */
export function SelectField({ label, value, onValue, options, error, hint, fieldClass, ...rest }: Omit<JSX.SelectHTMLAttributes<HTMLSelectElement>, 'label' | 'onInput'> & {
  label: string; value: string; onValue: (value: string) => void; options: [string, string][]; error?: string; hint?: ComponentChildren; fieldClass?: string;
}) {
  return (
    <Field label={label} error={error} hint={hint} class={fieldClass}>
      {(control) => (
        <select class="select" {...rest} {...control} value={value} onChange={(e) => onValue(e.currentTarget.value)}>
          {options.map(([v, words]) => <option key={v} value={v}>{words}</option>)}
        </select>
      )}
    </Field>
  );
}

/** A multi-line text (JSON, a note) in a Field; `mono` for code. */
export function TextAreaField({ label, value, onValue, error, hint, aside, fieldClass, mono, ...rest }: Omit<JSX.TextareaHTMLAttributes<HTMLTextAreaElement>, 'label' | 'onInput' | 'value'> & {
  label: string; value: string; onValue: (value: string) => void; error?: string; hint?: ComponentChildren; aside?: ComponentChildren; fieldClass?: string; mono?: boolean;
}) {
  return (
    <Field label={label} error={error} hint={hint} aside={aside} class={fieldClass}>
      {(control) => <textarea class={`input textarea${mono ? ' mono' : ''}`} spellcheck={mono ? false : undefined} {...rest} {...control} value={value} onInput={(e) => onValue(e.currentTarget.value)} />}
    </Field>
  );
}

/** A checkbox with its label beside it, and a line under it that describes it; `checkbox-group` lays several out in a grid. */
export function Checkbox({ label, checked, onChecked, hint, ...rest }: Omit<JSX.InputHTMLAttributes<HTMLInputElement>, 'label' | 'checked' | 'type'> & {
  label: ComponentChildren; checked: boolean; onChecked: (checked: boolean) => void; hint?: ComponentChildren;
}) {
  const id = useId();
  return (
    <div class="checkbox">
      <input {...rest} id={id} type="checkbox" checked={checked} onChange={(e) => onChecked(e.currentTarget.checked)} aria-describedby={hint ? `${id}-hint` : undefined} />
      <div>
        <label for={id}>{label}</label>
        {hint ? <span class="checkbox-hint" id={`${id}-hint`}>{hint}</span> : null}
      </div>
    </div>
  );
}

/** A failure of the whole form (not of one field), announced when it appears. */
export function FormError({ children }: { children?: ComponentChildren }) {
  return children ? <div class="form-error" role="alert">{children}</div> : null;
}
