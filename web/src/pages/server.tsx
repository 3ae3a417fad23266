import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense } from 'preact/compat';
import { useState } from 'preact/hooks';
import { Link, Route, Switch, useLocation } from 'wouter-preact';
import { get } from '../api/client';
import { serverKey, serverUrl } from '../api/servers';
import { useSignedInUser } from '../api/session';
import type { Resources, Server } from '../api/types';
import { ErrorText, Loading, StateBadge } from '../components/ui';
import { permissionsFor } from '../lib/permissions';
import { ServerContext, useServerSocket, useSocketFrames, useSocketState } from '../lib/server-context';
import { ConsoleSection } from './console';

const SchedulesSection = lazy(() => import('./schedules').then((m) => m.SchedulesSection));
const ScheduleDetail = lazy(() => import('./schedule-detail').then((m) => m.ScheduleDetail));
const ActivitySection = lazy(() => import('./activity').then((m) => m.ActivitySection));
const BackupsSection = lazy(() => import('./backups').then((m) => m.BackupsSection));
const FilesSection = lazy(() => import('./files').then((m) => m.FilesSection));
const StartupSection = lazy(() => import('./startup').then((m) => m.StartupSection));
const UsersSection = lazy(() => import('./users').then((m) => m.UsersSection));
const NetworkSection = lazy(() => import('./network').then((m) => m.NetworkSection));
const DatabasesSection = lazy(() => import('./databases').then((m) => m.DatabasesSection));
const SettingsSection = lazy(() => import('./settings').then((m) => m.SettingsSection));
// CodeMirror comes with this page only (its own chunks), never with the console's first load.
const FileEditorPage = lazy(() => import('./file-editor').then((m) => m.FileEditorPage));

interface Section {
  name: string;
  path: string;
  /** Hidden from a subuser known to lack it (the API refuses anyway); shown while unknown. */
  permission?: string;
}

const SECTIONS: Section[] = [
  { name: 'Console', path: '/' },
  { name: 'Files', path: '/files', permission: 'file.read' },
  { name: 'Databases', path: '/databases', permission: 'database.read' },
  { name: 'Schedules', path: '/schedules', permission: 'schedule.read' },
  { name: 'Users', path: '/users', permission: 'user.read' },
  { name: 'Backups', path: '/backups', permission: 'backup.read' },
  { name: 'Network', path: '/network', permission: 'allocation.read' },
  { name: 'Startup', path: '/startup', permission: 'startup.read' },
  { name: 'Settings', path: '/settings' },
  { name: 'Activity', path: '/activity', permission: 'activity.read' },
];

const isCurrent = (section: Section, location: string) =>
  section.path === '/' ? location === '/' || location === '' : location.startsWith(section.path);

const STATUS_NOTES: Record<string, string> = {
  installing: 'This server is installing: changes are refused until it is done.',
  install_failed: 'This server failed to install: changes are refused.',
  suspended: 'This server is suspended.',
  restoring_backup: 'A backup is being restored: power and console are unavailable until it is done.',
};

/** One server: its header, its section links, and the section shown (paths below /server/:id). */
export function ServerPage({ id }: { id: string }) {
  const user = useSignedInUser();
  const [location] = useLocation();
  const server = useQuery({
    queryKey: serverKey(id),
    queryFn: ({ signal }) => get<Server>(serverUrl(id), signal),
    // While a restore runs, its end is seen here (the backups page shows the progress).
    refetchInterval: (query) => (query.state.data?.attributes.status === 'restoring_backup' ? 1_000 : false),
  });
  const suspended = server.data?.attributes.status === 'suspended';
  const socket = useServerSocket(id, server.isSuccess && !suspended);
  useSocketState(socket);
  const resources = useQuery({
    queryKey: ['resources', id],
    queryFn: ({ signal }) => get<{ attributes: Resources }>(serverUrl(id, 'resources'), signal),
    enabled: server.isSuccess && !suspended,
  });
  const [liveState, setLiveState] = useState<string | null>(null);
  useSocketFrames(socket, (frame) => {
    if (frame.event === 'status' && typeof frame.args[0] === 'string') setLiveState(frame.args[0]);
  });

  if (server.isPending) return <Loading what="the server" />;
  if (server.isError) {
    return (
      <>
        <h1>Server</h1>
        <ErrorText error={server.error} />
        <Link href="~/">Back to your servers</Link>
      </>
    );
  }
  const attributes = server.data.attributes;
  const state = liveState ?? resources.data?.attributes.current_state ?? null;
  const permissions = permissionsFor(server.data, user, socket?.permissions ?? null);

  return (
    <ServerContext.Provider value={{ id, server: server.data, socket, permissions, state }}>
      <div class="server-head">
        <h1>{attributes.name}</h1>
        <StateBadge state={state} />
        <span class="muted mono">{attributes.identifier}</span>
      </div>
      {attributes.status && <p class="notice">{STATUS_NOTES[attributes.status] ?? `Status: ${attributes.status}`}</p>}
      <nav class="tabs" aria-label="Server sections">
        {SECTIONS.filter((section) => !section.permission || !permissions.known || permissions.can(section.permission)).map(
          (section) => {
            const current = isCurrent(section, location);
            return (
              <Link
                key={section.name}
                href={section.path}
                class={current ? 'tab current' : 'tab'}
                aria-current={current ? 'page' : undefined}
              >
                {section.name}
              </Link>
            );
          },
        )}
      </nav>
      <Suspense fallback={<Loading what="the section" />}>
        <Switch>
          <Route path="/" component={ConsoleSection} />
          <Route path="/files" component={FilesSection} />
          <Route path="/files/edit">{() => <FileEditorPage creating={false} />}</Route>
          <Route path="/files/new">{() => <FileEditorPage creating />}</Route>
          <Route path="/schedules" component={SchedulesSection} />
          <Route path="/schedules/:scheduleId">
            {(params: { scheduleId: string }) => <ScheduleDetail scheduleId={params.scheduleId} />}
          </Route>
          <Route path="/activity" component={ActivitySection} />
          <Route path="/backups" component={BackupsSection} />
          <Route path="/startup" component={StartupSection} />
          <Route path="/users" component={UsersSection} />
          <Route path="/network" component={NetworkSection} />
          <Route path="/databases" component={DatabasesSection} />
          <Route path="/settings" component={SettingsSection} />
          <Route>
            <p>
              No such section. <Link href="/">Open the console</Link>
            </p>
          </Route>
        </Switch>
      </Suspense>
    </ServerContext.Provider>
  );
}
