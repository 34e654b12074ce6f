import type { ComponentChildren } from 'preact';
import { useTitle } from '../hooks';

/** The frame of the sign-in pages: the mark, one card, a line under it. */
export function AuthLayout({ title, lede, children, foot }: { title: string; lede?: ComponentChildren; children: ComponentChildren; foot?: ComponentChildren }) {
  useTitle(title);
  return (
    <main class="auth">
      <div class="auth-card">
        <div class="brand"><span class="brand-mark" aria-hidden="true">H</span>Herald</div>
        <section class="auth-panel" aria-labelledby="auth-title">
          <h1 id="auth-title">{title}</h1>
          {lede ? <p class="lede">{lede}</p> : null}
          {children}
        </section>
        {foot ? <p class="auth-foot">{foot}</p> : null}
      </div>
    </main>
  );
}

/** "in 42 seconds (at 14:05)": when a locked sign-in may be tried again (a 429's Retry-After). */
export function retryWords(seconds: number): string {
  const at = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' }).format(new Date(Date.now() + seconds * 1000));
  const span = seconds < 90 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
  return `in ${span} (at ${at})`;
}

export const MIN_PASSWORD = 10; // people/passwords.ts MIN_PASSWORD_LENGTH
