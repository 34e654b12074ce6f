import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { ApiFailure } from '../../api';
import { Button, EmptyState, Page, type IconName } from '../../components';

/**
 * A detail page whose one thing did not load. A 404 says it is not in this project (deleted, or another project's:
 * the API answers a foreign id with a 404, so the page cannot tell which and does not pretend to); any other failure
 * says what failed and offers to try again when it can. Either way, the way back to the list.
 */
export function NotLoaded({ error, thing, title, icon, breadcrumb, back, missingTitle, missingHint, retry }: {
  /** Undefined when the load ended with nothing (no error, no data): said as a failure. */
  error: Error | undefined;
  /** The thing in words, lower case: "contact", "webhook endpoint". */
  thing: string;
  /** The page's title when it loads ("Contact"); "<title> not found" when it does not exist. */
  title: string;
  icon: IconName;
  breadcrumb: ComponentChildren;
  back: { href: string; label: string };
  /** What a missing one is called when "There is no such <thing> in this project" does not say it. */
  missingTitle?: string;
  missingHint?: string;
  retry?: () => void;
}) {
  const { route } = useLocation();
  // 404: not in this project. 400 and 422: an id that cannot be one (a mistyped link), which names nothing either.
  const missing = error instanceof ApiFailure && [400, 404, 422].includes(error.status);
  return (
    <Page title={missing ? `${title} not found` : title} breadcrumb={breadcrumb}>
      <EmptyState icon={icon} title={missing ? (missingTitle ?? `There is no such ${thing} in this project`) : `The ${thing} did not load`}
        actions={!missing && retry ? <Button onClick={retry}>Try again</Button> : <Button onClick={() => route(back.href)}>{back.label}</Button>}>
        {missing ? (missingHint ?? 'It may have been deleted, or it belongs to another project.') : error?.message}
      </EmptyState>
    </Page>
  );
}
