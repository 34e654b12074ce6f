import { useRoute } from 'preact-iso';
import { EmptyState, LinkButton, Page, Tabs } from '../components';
import { useSession } from '../session';
import { Account } from './settings/Account';
import { AuditLog } from './settings/AuditLog';
import { General } from './settings/General';
import { Keys } from './settings/Keys';
import { Members } from './settings/Members';

/**
 * Settings (issue 28, point 8): sections with their own URLs, /app/settings/<section>. The project's sections follow
 * the role (keys, members and the audit log are an admin's: a member or a viewer is not shown them); Account is the
 * person signed in, whatever their role.
 */
const SECTIONS = [
  { id: 'general', label: 'General', what: 'the general settings', admin: false, component: General },
  { id: 'keys', label: 'API keys', what: 'the API keys', admin: true, component: Keys },
  { id: 'members', label: 'Members', what: 'the members', admin: true, component: Members },
  { id: 'audit-log', label: 'Audit log', what: 'the audit log', admin: true, component: AuditLog },
  { id: 'account', label: 'Your account', what: 'your account', admin: false, component: Account },
] as const;

export default function Settings() {
  const { params } = useRoute();
  const { can, project } = useSession();
  const id = params.tab ?? 'general';
  const section = SECTIONS.find((s) => s.id === id);
  const visible = SECTIONS.filter((s) => !s.admin || can('admin'));

  let body;
  if (!section) {
    body = (
      <EmptyState icon="settings" title="There is no such section of Settings" actions={<LinkButton href="/app/settings/general">Go to General</LinkButton>}>
        The sections are {visible.map((s) => s.label).join(', ')}.
      </EmptyState>
    );
  } else if (section.admin && !can('admin')) {
    body = (
      <EmptyState icon="lock" title={`Only admins and owners see ${section.what}`}>
        Your role in {project?.projectName ?? 'this project'} is {project?.role ?? 'none'}: ask an admin or an owner of the project.
      </EmptyState>
    );
  } else {
    const Section = section.component;
    body = <Section />;
  }
  return (
    <Page title="Settings" lede={project ? <>The project <strong>{project.projectName}</strong> and your own account.</> : 'Your own account.'}>
      <Tabs label="Settings sections" current={section?.id ?? ''}
        tabs={visible.map((s) => ({ id: s.id, href: `/app/settings/${s.id}`, label: s.label }))} />
      <div class="settings-section">{body}</div>
    </Page>
  );
}
