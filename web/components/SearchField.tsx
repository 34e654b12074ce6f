import type { JSX } from 'preact';
import { useId } from 'preact/hooks';
import { Icon } from './icons';

/**
 * A page's search box: pressing `/` anywhere in the console focuses it (web/shell.tsx looks for
 * `[data-page-search]`). One per page; its label is visible to screen readers and shown as the placeholder.
 */
export function SearchField({ label, value, onValue, ...rest }: Omit<JSX.InputHTMLAttributes<HTMLInputElement>, 'label' | 'onInput'> & {
  label: string; value: string; onValue: (value: string) => void;
}) {
  const id = useId();
  return (
    <div class="search">
      <label for={id} class="visually-hidden">{label}</label>
      <Icon name="search" />
      <input {...rest} id={id} class="input" type="search" data-page-search="" placeholder={label} value={value} onInput={(e) => onValue(e.currentTarget.value)} />
      <kbd aria-hidden="true">/</kbd>
    </div>
  );
}
