import { QueryClient, QueryClientProvider, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense } from 'preact/compat';
import { useEffect } from 'preact/hooks';
import { Link, Route, Switch } from 'wouter-preact';
import { ApiError, rememberCsrfToken, request, whenSignedOut } from './api/client';
import { forgetSignedInData, useSession, useSignOut } from './api/session';
import { ErrorText, Loading, PageErrorBoundary } from './components/ui';
import { SignInPage } from './pages/sign-in';
import type { List, Server } from './api/types';
import { serversQuery, serversUrl } from './api/servers';
import { ServersPage } from './pages/servers';

// The rest load when first visited: the sign-in form and the server list stay small.
const ServerPage = lazy(() => import('./pages/server').then((m) => m.ServerPage));
const AccountPage = lazy(() => import('./pages/account').then((m) => m.AccountPage));

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 4xx will not change by asking again; a dropped connection may.
      retry: (count, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && count < 2,
      refetchOnWindowFocus: false,
      staleTime: 2_000,
    },
  },
});

// Signed in (the CSRF cookie says a session probably is) and opening the server list: ask for it
// together with the session instead of after it, one round trip sooner. A 401 here changes nothing.
if (location.pathname === '/' && /(?:^|;\s*)XSRF-TOKEN=/.test(document.cookie)) {
  void queryClient.prefetchQuery({
    queryKey: serversQuery.queryKey,
    queryFn: ({ signal }) => request<List<Server>>('GET', serversUrl, { quietUnauthenticated: true, signal }),
  });
}

export function App() {
  return (
    <QueryClientProvider client={queryClient}>
      <Shell />
    </QueryClientProvider>
  );
}

function Shell() {
  const session = useSession();
  const client = useQueryClient();
  useEffect(() => {
    whenSignedOut(() => {
      rememberCsrfToken(null);
      forgetSignedInData(client);
    });
  }, [client]);

  if (session.isPending) return <Loading what="the console" />;
  if (session.isError) {
    return (
      <main class="page narrow">
        <h1>Quetzal</h1>
        <ErrorText error={session.error} />
      </main>
    );
  }
  if (!session.data) return <SignInPage />;
  return <SignedIn username={session.data.user.username} />;
}

function SignedIn({ username }: { username: string }) {
  const signOut = useSignOut();
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link href="/" class="brand">
          Quetzal
        </Link>
        <nav aria-label="Main">
          <Link href="/">Servers</Link>
          <Link href="/account">Account</Link>
        </nav>
        <span class="who" title="Signed in as">
          {username}
        </span>
        <button type="button" class="link" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" class="page">
        <PageErrorBoundary>
          <Suspense fallback={<Loading what="the page" />}>
            <Switch>
              <Route path="/" component={ServersPage} />
              <Route path="/account" component={AccountPage} />
              <Route path="/server/:id" nest>
                {(params: { id: string }) => <ServerPage id={params.id} />}
              </Route>
              <Route>
                <h1>Page not found</h1>
                <p>
                  Nothing lives at this address. <Link href="/">Back to your servers</Link>
                </p>
              </Route>
            </Switch>
          </Suspense>
        </PageErrorBoundary>
      </main>
    </>
  );
}
