import { EmptyState, LinkButton, Page } from '../components';

export default function NotFound() {
  return (
    <Page title="Page not found">
      <EmptyState icon="alert" title="There is no page at this address" actions={<LinkButton href="/app" variant="primary">Go to Overview</LinkButton>}>
        The link may be old, or mistyped.
      </EmptyState>
    </Page>
  );
}
