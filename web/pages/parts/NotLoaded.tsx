import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { ApiFailure } from '../../api';
import { Button, EmptyState, Page, type IconName } from '../../components';

/**
 * A detail page whose one thing did not load. A 404 says it is not in this project (deleted, or another project's:
 * the API answers a foreign id with a 404, so the page cannot tell which and does not pretend to); any other failure
 * says what failed and offers to try again when it can. Either way, the way back to the list.
 */
export function NotLoaded({ error, thing, title, icon, breadcrumb, back, missingHint, retry }: {
  error: Error;
  /** The thing in words, lower case: "contact", "webhook endpoint". */
  thing: string;
  /** The page's title when it loads ("Contact"); "<title> not found" when it does not exist. */
  title: string;
  icon: IconName;
  breadcrumb: ComponentChildren;
  back: { href: string; label: string };
  missingHint?: string;
  retry?: () => void;
}) {
  const { route } = useLocation();
  const missing = error instanceof ApiFailure && error.status === 404;
  return (
    <Page title={missing ? `${title} not found` : title} breadcrumb={breadcrumb}>
      <EmptyState icon={icon} title={missing ? `There is no such ${thing} in this project` : `The ${thing} did not load`}
        actions={!missing && retry ? <Button onClick={retry}>Try again</Button> : <Button onClick={() => route(back.href)}>{back.label}</Button>}>
        {missing ? (missingHint ?? 'It may have been deleted, or it belongs to another project.') : error.message}
      </EmptyState>
    </Page>
  );
}
