import type { ComponentChildren } from 'preact';
import { useTitle } from '../hooks';

/**
 * A page of the shell: its heading (the document title follows it), a line under it, actions on the right, and the
 * content. Every page of web/pages/ starts with one.
 */
export function Page({ title, lede, actions, breadcrumb, children }: {
  title: string; lede?: ComponentChildren; actions?: ComponentChildren; breadcrumb?: ComponentChildren; children?: ComponentChildren;
}) {
  useTitle(title);
  return (
    <div class="page">
      <header class="page-header">
        <div class="page-header-text">
          {breadcrumb ? <nav class="breadcrumb" aria-label="Breadcrumb">{breadcrumb}</nav> : null}
          <h1>{title}</h1>
          {lede ? <p class="lede">{lede}</p> : null}
        </div>
        {actions ? <div class="page-actions">{actions}</div> : null}
      </header>
      {children}
    </div>
  );
}
