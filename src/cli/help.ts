/**
 * What `quetzal --help` and `quetzal <command> --help` say: one line on what a
 * command does and one per option. Every command in src/cli/commands/index.ts
 * and each of its options has an entry (test/cli/help.test.ts checks).
 */
export interface CommandHelp {
  summary: string;
  options: Readonly<Record<string, string>>;
}

const SERVER = 'the server: its UUID or 8-character short identifier';
const LIMITS = {
  memory: 'memory limit in MiB (0: none)',
  cpu: 'CPU limit in percent of one core (0: none)',
  disk: 'disk limit in MiB (0: none)',
  pids: 'most processes at once',
  inodes: 'most files and folders in its volume',
  'allocation-limit': 'most allocations the client may give it',
  'backup-limit': 'most backups the client may keep',
  'database-limit': 'most databases the client may create (0: none)',
};

export const COMMAND_HELP: Readonly<Record<string, CommandHelp>> = {
  migrate: { summary: 'Bring the database up to date (serve and worker do it too).', options: {} },
  serve: {
    summary: 'Run the API, the web console, SFTP and the scheduler until stopped (SIGINT/SIGTERM).',
    options: {},
  },
  worker: { summary: 'Run only the scheduler until stopped, next to a serve elsewhere.', options: {} },
  'user:create': {
    summary: 'Create a user.',
    options: {
      username: 'the login name',
      email: 'the e-mail address',
      admin: 'make the user a root admin',
      'password-stdin': 'read the password from the first line of standard input',
    },
  },
  'user:password': {
    summary: "Set a user's password from the first line of standard input; ends the user's sessions.",
    options: { user: 'the user: username, e-mail or UUID' },
  },
  'server:create': {
    summary: 'Create a server for a user, with its limits, its allocation and optionally an egg.',
    options: {
      owner: 'the owning user: username, e-mail or UUID',
      name: "the server's name",
      startup: 'the command that starts it',
      'stop-command': 'the console line that asks it to stop',
      ...LIMITS,
      allocation: 'its primary allocation IP:PORT, or auto for the first free one (the default)',
      egg: 'install from this egg (egg:list)',
      image: 'the image it runs in (image:list)',
      variable: 'an egg variable KEY=VALUE; repeat for more',
    },
  },
  'server:status': {
    summary: "Set a server's status by hand (e.g. clear a failed install or a suspension).",
    options: {
      server: SERVER,
      set: 'none, installing, install_failed or suspended',
      force: 'also clear a restore in progress (with --set none)',
    },
  },
  'server:update': {
    summary: "Change a server's name, startup, image or limits; a running server gets them at its next start.",
    options: {
      server: SERVER,
      name: 'the new name',
      startup: 'the new startup command',
      'stop-command': 'the new stop line',
      image: 'the new image (image:list)',
      ...LIMITS,
    },
  },
  'server:delete': {
    summary: 'Delete a server, its rows and its files.',
    options: { server: SERVER, force: 'even while it runs, or when a database host cannot drop its databases' },
  },
  'server:reinstall': { summary: "Run the server's egg install script again.", options: { server: SERVER } },
  'servers:stop': {
    summary: 'Stop every running server (or one), whether the service runs or not.',
    options: { server: SERVER },
  },
  'key:create': {
    summary: 'Create a client API key for a user; the token is shown once.',
    options: {
      user: 'the user: username, e-mail or UUID',
      description: "the key's description",
      'allowed-ips': 'comma-separated addresses or CIDR ranges the key may be used from',
    },
  },
  'key:revoke': { summary: 'Revoke a client API key.', options: { identifier: "the key's identifier" } },
  'subuser:add': {
    summary: 'Give a user access to a server with some permissions.',
    options: {
      server: SERVER,
      user: 'the user: username, e-mail or UUID',
      permissions: 'comma-separated permissions, e.g. control.console,file.read',
    },
  },
  'backup:create': {
    summary: 'Take a backup of a server now.',
    options: { server: SERVER, name: "the backup's name" },
  },
  'backup:import': {
    summary: 'Add a .tar.gz archive as a backup of a server (restore it with the API or the console).',
    options: { server: SERVER, file: 'the .tar.gz archive', name: "the backup's name" },
  },
  'allocation:add': {
    summary: 'Add allocations (IP and ports) servers may be given.',
    options: { ip: 'the address', ports: 'ports and ranges, e.g. 25565,25570-25580', alias: 'a name shown instead of the IP' },
  },
  'allocation:list': {
    summary: 'List allocations: all, a server’s, or the free ones.',
    options: { server: SERVER, free: 'only those no server holds' },
  },
  'allocation:remove': {
    summary: 'Remove allocations; refused while a server holds any of them.',
    options: { ip: 'the address', ports: 'ports and ranges, e.g. 25565,25570-25580' },
  },
  'database-host:add': {
    summary: 'Register a MariaDB/MySQL or PostgreSQL server that servers’ databases are created on (checked first).',
    options: {
      name: "the host's name",
      url: 'mysql://user:password@host:port or postgres://user:password@host:port[/maintenance-db]',
      'max-databases': 'most databases created on it (default: no limit)',
    },
  },
  'database-host:list': { summary: 'List database hosts (never their passwords).', options: {} },
  'database-host:remove': {
    summary: 'Remove a database host; refused while it holds databases.',
    options: { name: "the host's name" },
  },
  'image:build': {
    summary: 'Build an image from Debian packages (mmdebstrap).',
    options: {
      name: "the image's name",
      packages: 'space-separated Debian packages',
      suite: 'the Debian suite (the builder’s default otherwise)',
    },
  },
  'image:import': {
    summary: 'Import an image from a `docker save` or OCI archive.',
    options: { name: "the image's name", file: 'the archive' },
  },
  'image:list': { summary: 'List the images on this node.', options: {} },
  'image:remove': { summary: 'Remove an image no server is set to run on.', options: { name: "the image's name" } },
  'egg:import': {
    summary: 'Import a Pterodactyl or Pelican egg export (JSON); one of the same uuid is updated.',
    options: { file: 'the egg JSON file' },
  },
  'egg:list': { summary: 'List the imported eggs and their images.', options: {} },
};

/** `quetzal <command> --help`: the usage line, what it does, and each option. */
export function commandHelp(command: {
  name: string;
  usage: string;
  valueOptions: readonly string[];
  flagOptions?: readonly string[];
  repeatableOptions?: readonly string[];
  service?: true;
}): string {
  const help = COMMAND_HELP[command.name];
  const lines = [`usage: quetzal ${command.name} ${command.usage}`.trimEnd()];
  if (help) lines.push('', help.summary);
  const names = [...new Set([...command.valueOptions, ...(command.repeatableOptions ?? []), ...(command.flagOptions ?? [])])];
  if (names.length > 0) {
    lines.push('', 'options:');
    const width = Math.max(...names.map((name) => name.length)) + 2;
    for (const name of names) lines.push(`  ${`--${name}`.padEnd(width)}  ${help?.options[name] ?? ''}`.trimEnd());
  }
  if (command.service) lines.push('', '  --help  show this help');
  else lines.push('', '  --json  print the result as one JSON object', '  --help  show this help');
  return `${lines.join('\n')}\n`;
}
