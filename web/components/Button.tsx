import type { ComponentChildren, JSX } from 'preact';
import { Spinner } from './Spinner';

export type ButtonVariant = 'primary' | 'secondary' | 'danger' | 'ghost';

type ButtonProps = Omit<JSX.ButtonHTMLAttributes<HTMLButtonElement>, 'size' | 'type'> & {
  variant?: ButtonVariant;
  size?: 'sm' | 'md';
  /** Shows a spinner and disables the button while the action runs. */
  busy?: boolean;
  block?: boolean;
  type?: 'button' | 'submit';
  disabled?: boolean;
  children?: ComponentChildren;
};

const classes = (variant: ButtonVariant, size: 'sm' | 'md', block?: boolean, extra?: string) =>
  ['btn', `btn-${variant}`, size === 'sm' ? 'btn-sm' : '', block ? 'btn-block' : '', extra ?? ''].filter(Boolean).join(' ');

/** A button: `primary` for the page's one main action, `secondary` for the rest, `danger` for what deletes. */
export function Button({ variant = 'secondary', size = 'md', busy, block, type = 'button', disabled, class: cls, children, ...rest }: ButtonProps) {
  return (
    <button {...rest} type={type} class={classes(variant, size, block, cls as string | undefined)} disabled={disabled || busy} aria-busy={busy ? 'true' : undefined}>
      {busy ? <Spinner label="" /> : null}
      {children}
    </button>
  );
}

/** A link that looks like a button (navigation, downloads). */
export function LinkButton({ variant = 'secondary', size = 'md', block, class: cls, children, ...rest }: JSX.AnchorHTMLAttributes<HTMLAnchorElement> & { variant?: ButtonVariant; size?: 'sm' | 'md'; block?: boolean; href: string }) {
  return <a {...rest} class={classes(variant, size, block, cls as string | undefined)}>{children}</a>;
}
