import type { ComponentChildren } from 'preact';
import { Icon, type IconName } from './icons';

/** An empty list or a page to come: what is missing, and what to do next (an action, a command to copy). */
export function EmptyState({ icon = 'inbox', title, children, actions, code }: {
  icon?: IconName; title: string; children?: ComponentChildren; actions?: ComponentChildren; code?: string;
}) {
  return (
    <section class="empty" aria-label={title}>
      <div class="empty-icon"><Icon name={icon} /></div>
      <h2>{title}</h2>
      {children ? <p>{children}</p> : null}
      {code ? <pre><code>{code}</code></pre> : null}
      {actions ? <div class="actions">{actions}</div> : null}
    </section>
  );
}
