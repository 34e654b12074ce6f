import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { Button, Icon } from './components';
import { APP_PAGES, type NavGroup } from './pages';
import { useSession } from './session';

/**
 * The frame of every signed-in page: the side bar (the pages, the project switcher, who is signed in, `Sign out`),
 * which folds into a drawer behind a `Menu` button on a phone; `/` focuses the page's search field.
 */
const GROUPS: NavGroup[] = ['Send', 'Marketing', 'Configure'];

function isCurrent(path: string, page: string): boolean {
  if (page === '/app') return path === '/app' || path === '/app/';
  return path === page || path.startsWith(`${page}/`);
}

function initials(name: string, email: string): string {
  const words = (name || email).split(/[\s@.]+/).filter(Boolean);
  return ((words[0]?.[0] ?? '?') + (words[1]?.[0] ?? '')).toUpperCase();
}

function ProjectSwitcher() {
  const { me, project, switchProject } = useSession();
  if (!project) return <p class="project-name muted">No project yet</p>;
  if (me.projects.length < 2) return <p class="project-name" title="Project">{project.projectName}</p>;
  return (
    <div class="project-switcher">
      <label for="project-switcher">Project</label>
      <select id="project-switcher" class="select" value={project.projectId} onChange={(e) => switchProject(e.currentTarget.value)}>
        {me.projects.map((p) => <option key={p.projectId} value={p.projectId} disabled={p.projectDisabled}>{p.projectName}{p.projectDisabled ? ' (disabled)' : ''}</option>)}
      </select>
    </div>
  );
}

export function Shell({ children }: { children: ComponentChildren }) {
  const { path } = useLocation();
  const { me, project, signOut } = useSession();
  const [menu, setMenu] = useState(false);
  const [leaving, setLeaving] = useState(false);

  useEffect(() => { setMenu(false); }, [path]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && menu) setMenu(false);
      if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey) return;
      const target = e.target as HTMLElement | null;
      if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
      const search = document.querySelector<HTMLInputElement>('[data-page-search]');
      if (search) {
        e.preventDefault();
        search.focus();
        search.select();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [menu]);

  const leave = async () => {
    setLeaving(true);
    try { await signOut(); } finally { setLeaving(false); }
  };

  return (
    <div class="shell" data-menu={menu ? 'open' : 'closed'}>
      <a href="#main" class="skip-link">Skip to content</a>
      <header class="topbar">
        <button type="button" class="btn btn-ghost btn-icon menu-button" aria-label="Menu" aria-expanded={menu} aria-controls="sidebar" onClick={() => setMenu(!menu)}>
          <Icon name="menu" size={18} />
        </button>
        <a href="/app" class="brand"><span class="brand-mark" aria-hidden="true">H</span>Herald</a>
        {project ? <span class="topbar-project">{project.projectName}</span> : null}
      </header>
      {menu ? <button type="button" class="scrim" aria-label="Close the menu" tabIndex={-1} onClick={() => setMenu(false)} /> : null}
      <aside class="sidebar" id="sidebar" aria-label="Console">
        <a href="/app" class="brand"><span class="brand-mark" aria-hidden="true">H</span>Herald</a>
        <ProjectSwitcher />
        <nav class="nav" aria-label="Pages">
          {GROUPS.map((group) => (
            <div key={group} class="nav" role="group" aria-label={group}>
              {group === 'Send' ? null : <div class="nav-section" aria-hidden="true">{group}</div>}
              {APP_PAGES.filter((p) => p.nav?.group === group).map((p) => (
                <a key={p.path} href={p.path} aria-current={isCurrent(path, p.path) ? 'page' : undefined}>
                  <Icon name={p.nav!.icon} />
                  {p.nav!.label}
                </a>
              ))}
            </div>
          ))}
        </nav>
        <div class="sidebar-foot">
          <div class="whoami">
            <span class="avatar" aria-hidden="true">{initials(me.user.name, me.user.email)}</span>
            <div class="whoami-text">
              <div class="whoami-name">{me.user.name || me.user.email}</div>
              <div class="whoami-email">{me.user.email}{project ? ` · ${project.role}` : ''}</div>
            </div>
          </div>
          <Button variant="ghost" size="sm" busy={leaving} onClick={leave}><Icon name="logout" />Sign out</Button>
        </div>
      </aside>
      <main class="main" id="main" tabIndex={-1} key={project?.projectId ?? "none"}>
        {children}
      </main>
    </div>
  );
}
