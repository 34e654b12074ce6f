import type { ComponentChildren } from 'preact';

/**
 * Tabs that are links (each section has its own URL, so it can be linked, reloaded and gone back to): the current one
 * is marked with aria-current. On a phone the row scrolls sideways.
 */
export function Tabs({ label, tabs, current }: { label: string; tabs: { href: string; label: ComponentChildren; id: string }[]; current: string }) {
  return (
    <nav class="tabs" aria-label={label}>
      {tabs.map((t) => <a key={t.id} href={t.href} aria-current={t.id === current ? 'page' : undefined}>{t.label}</a>)}
    </nav>
  );
}
