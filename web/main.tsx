/**
 * The console's entry (built by scripts/buildWeb.ts into assets/main-<hash>.js). It holds only the frame: the router,
 * the session and the shell; every page is a lazy chunk (web/pages/index.tsx).
 */
import './styles/index.css';
import { render } from 'preact';
import { useCallback, useEffect } from 'preact/hooks';
import { ErrorBoundary, LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { Toasts } from './components/Toasts';
import { setNavigator } from './navigation';
import { APP_PAGES, AUTH_PAGES, isAuthPath, NotFoundPage, preloadPage } from './pages';
import { askSessionEarly, SessionProvider } from './session';
import { Shell } from './shell';

function App() {
  const { path, route } = useLocation();
  useEffect(() => { setNavigator(route); }, [route]);
  const signedOut = useCallback(() => route('/app/login', true), [route]);

  if (isAuthPath(path)) {
    return (
      <ErrorBoundary>
        <Router>
          {AUTH_PAGES.map((p) => <Route key={p.path} path={p.path} component={p.component} />)}
        </Router>
      </ErrorBoundary>
    );
  }
  return (
    <SessionProvider onSignedOut={signedOut}>
      <Shell>
        <ErrorBoundary>
          <Router onRouteChange={() => window.scrollTo(0, 0)}>
            {[
              ...APP_PAGES.map((p) => <Route key={p.path} path={p.path} component={p.component} />),
              <Route key="/app/" path="/app/" component={APP_PAGES[0]!.component} />,
              <Route key="404" default component={NotFoundPage} />,
            ]}
          </Router>
        </ErrorBoundary>
      </Shell>
    </SessionProvider>
  );
}

// The first page's chunk and the session, both at once and before the first render: neither waits for the other.
preloadPage(location.pathname);
if (!isAuthPath(location.pathname)) askSessionEarly();
// A sign-in page asks for no session; the one Herald preloaded for a browser with the cookie (api/console.ts
// SESSION_PRELOAD) is taken all the same, so that it is not left as an unused preload.
else if (document.querySelector('link[rel="preload"][href="/auth/session"]')) void fetch('/auth/session').catch(() => undefined);

render(
  <LocationProvider scope="/app">
    <App />
    <Toasts />
  </LocationProvider>,
  document.getElementById('app')!,
);
