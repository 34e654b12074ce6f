import { useState } from 'preact/hooks';
import { Icon } from './icons';
import { toast } from './Toasts';

/**
 * Copies `value` with the Clipboard API and says so: a "Copied" toast, and the icon (and word) turn to a check for a
 * moment. `label` names what it copies, for screen readers and the tooltip ("Copy the value of the DKIM record").
 * With `text` the button shows that word ("Copy") and its name is that word and the rest of the label; without it
 * the button is an icon named by the label.
 */
export function CopyButton({ value, label, text, size = 'sm' }: { value: string; label: string; text?: string; size?: 'sm' | 'md' }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
    } catch {
      toast.error('The browser did not let the console copy: select the text and copy it by hand.');
      return;
    }
    toast('Copied');
    setDone(true);
    setTimeout(() => setDone(false), 1500);
  };
  const classes = ['btn', text ? 'btn-secondary' : 'btn-ghost', size === 'sm' ? 'btn-sm' : '', 'copy-button', text ? '' : 'btn-icon'];
  return (
    // With a word the name is that word and the rest of the label, hidden ("Copy" + " API key"; "Copied API key" once
    // done): a name that starts with what a person sees. Without one the label is the icon's name.
    <button type="button" class={classes.filter(Boolean).join(' ')} aria-label={text ? undefined : label} title={label} onClick={copy}>
      <Icon name={done ? 'check' : 'copy'} />
      {text ? <>{done ? 'Copied' : text}<span class="visually-hidden">{label.replace(/^Copy\b/, '')}</span></> : null}
    </button>
  );
}

/**
 * A value to copy (a key, a link, a secret): shown in full in monospace, selectable, with its copy button; `label`
 * is its visible name.
 */
export function CopyField({ label, value, secret }: { label: string; value: string; secret?: boolean }) {
  return (
    <div class="copy-field">
      <div class="copy-field-label">{label}</div>
      <div class="copy-field-row">
        <code class={`copy-field-value${secret ? ' copy-field-secret' : ''}`} data-copy-value="">{value}</code>
        <CopyButton value={value} label={`Copy ${label}`} text="Copy" />
      </div>
    </div>
  );
}
