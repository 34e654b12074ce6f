import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useEffect, useMemo, useState } from 'preact/hooks';
import { roleAllows, type Permission, type Role } from '../projects/roles';
import { api, call, setApiProject, type Schemas } from './api';
import { Loading } from './components/Spinner';

/**
 * Who is signed in (GET /auth/session), the project they act on, and what their role there allows. The current
 * project is remembered in local storage (per browser) and sent as `Herald-Project` by web/api.ts.
 *
 *   const { can } = useSession();
 *   {can('write') ? <Button>New contact</Button> : null}     // a viewer is offered no change
 *
 * `can` takes the permission names of the route table (projects/roles.ts): read, send, write, admin, owner.
 */
export type SignedIn = Schemas['SignedIn'];
export type Membership = Schemas['Membership'];

export interface Session {
  me: SignedIn;
  /** The project the console acts on; null for a person in no project. */
  project: Membership | null;
  switchProject: (projectId: string) => void;
  can: (permission: Permission) => boolean;
  signOut: () => Promise<void>;
  /** Asks GET /auth/session again (after a change to the person: two-factor turned on or off). */
  refresh: () => Promise<void>;
}

const SessionContext = createContext<Session | null>(null);
const STORAGE_KEY = 'herald.project';

function remembered(): string | null {
  try { return localStorage.getItem(STORAGE_KEY); } catch { return null; }
}
function remember(id: string): void {
  try { localStorage.setItem(STORAGE_KEY, id); } catch { /* private mode: the choice lasts this page only */ }
}

export function pickProject(projects: Membership[], wanted: string | null): Membership | null {
  const live = projects.filter((p) => !p.projectDisabled);
  return live.find((p) => p.projectId === wanted) ?? live[0] ?? projects[0] ?? null;
}

/** GET /auth/session asked before the first render (main.tsx), for the provider's first mount to use. */
let early: Promise<SignedIn> | null = null;

/**
 * Asks GET /auth/session now, while the page's chunk loads, instead of after the first render and its effect (a frame
 * or more later). Not on the sign-in pages, which have no session to ask for (a 401 would send them to themselves).
 */
export function askSessionEarly(): void {
  early = call(api.GET('/auth/session'));
  early.catch(() => undefined); // the provider handles the failure (a 401 already went to the sign-in page)
}

export function SessionProvider({ children, onSignedOut }: { children: ComponentChildren; onSignedOut: () => void }) {
  const [me, setMe] = useState<SignedIn | null>(null);
  const [projectId, setProjectId] = useState<string | null>(remembered);
  useEffect(() => {
    // A 401 sends the person to the sign-in page (web/api.ts).
    const asked = early ?? call(api.GET('/auth/session'));
    early = null; // a later mount (after signing in again) asks afresh
    asked.then(setMe, () => undefined);
  }, []);
  const project = me ? pickProject(me.projects, projectId) : null;
  setApiProject(project?.projectId ?? null);

  const switchProject = useCallback((id: string) => {
    remember(id);
    setProjectId(id);
  }, []);
  const signOut = useCallback(async () => {
    await call(api.POST('/auth/logout'));
    onSignedOut();
  }, [onSignedOut]);
  const refresh = useCallback(async () => { setMe(await call(api.GET('/auth/session'))); }, []);
  const session = useMemo<Session | null>(() => me && {
    me, project, switchProject, signOut, refresh,
    can: (permission: Permission) => project !== null && roleAllows(project.role as Role, permission),
  }, [me, project, switchProject, signOut, refresh]);

  if (!session) return <Loading what="Opening the console" />;
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside <SessionProvider>');
  return session;
}

/** Renders its children only when the role allows `permission` (edit buttons, forms that change things). */
export function Can({ permission, children }: { permission: Permission; children: ComponentChildren }) {
  return useSession().can(permission) ? <>{children}</> : null;
}
