import { EmptyState, Page } from '../components';

/** The marketing pages not built yet (issue 29): what the page will do, and that the API already does it. */
export default function Coming({ what, does }: { what: string; does: string }) {
  return (
    <Page title={what}>
      <EmptyState icon="sparkle" title={`${what} is coming to the console`}>
        {does} The API already has it: see {what.toLowerCase()} in the reference at <a href="/docs">/docs</a>.
      </EmptyState>
    </Page>
  );
}
