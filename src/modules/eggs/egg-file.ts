/**
 * Reading an egg file (docs/reference/eggs-and-installs.md): Pterodactyl's exports (`PTDL_v1`, `PTDL_v2`)
 * and Pelican's (`PLCN_v1`, `PLCN_v2`, `PLCN_v3`), into one shape. Pure: no
 * database. Every problem is an EggFileError whose message is one line saying
 * what is wrong, so `egg:import` can print it. See docs/EGGS.md for the fields
 * kept and those ignored.
 */
import { createHash } from 'node:crypto';
import type { ConfigFileParser } from '../../daemon/daemon.js';
import { parseRules, VariableRulesError } from './variable-rules.js';

export class EggFileError extends Error {}

export const EGG_FORMATS = ['PTDL_v1', 'PTDL_v2', 'PLCN_v1', 'PLCN_v2', 'PLCN_v3'] as const;

/**
 * Names an egg variable cannot take: the environment the panel and the
 * daemon set themselves (Pterodactyl's EggVariable::RESERVED_ENV_NAMES and
 * the ones this panel adds).
 */
export const RESERVED_ENV_NAMES: ReadonlySet<string> = new Set([
  'SERVER_MEMORY',
  'SERVER_IP',
  'SERVER_PORT',
  'ENV',
  'HOME',
  'USER',
  'PATH',
  'STARTUP',
  'SERVER_UUID',
  'UUID',
  'P_SERVER_UUID',
  'P_SERVER_LOCATION',
  'P_SERVER_ALLOCATION_LIMIT',
]);

export interface EggFileVariable {
  name: string;
  description: string;
  env_variable: string;
  default_value: string;
  user_viewable: boolean;
  user_editable: boolean;
  /** Laravel's pipe-separated list (an array in Pelican's files is joined). */
  rules: string;
  sort: number;
}

/** One file of `config.files`: what Wings edits before every start. */
export interface EggConfigFile {
  parser: ConfigFileParser;
  /**
   * Key → value with Wings' placeholders still in it, or (Wings' conditional
   * form) `{ "<if value>": "<replace with>" }`.
   */
  find: Record<string, string | Record<string, string>>;
}

export interface EggFile {
  format: (typeof EGG_FORMATS)[number];
  uuid: string;
  name: string;
  author: string;
  description: string;
  /** Display name → image name, in the file's order (the first is the default). */
  docker_images: Record<string, string>;
  startup: string;
  config_stop: string | null;
  done: string[];
  config_files: Record<string, EggConfigFile>;
  file_denylist: string[];
  features: string[];
  script_install: string;
  script_container: string;
  script_entrypoint: string;
  variables: EggFileVariable[];
}

const PARSERS: Record<string, ConfigFileParser> = {
  properties: 'properties',
  yaml: 'yaml',
  yml: 'yaml',
  json: 'json',
  ini: 'ini',
  xml: 'xml',
  file: 'file',
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function fail(message: string): never {
  throw new EggFileError(message);
}

/** The egg in `content` (an egg file's text); throws EggFileError. */
export function parseEggFile(content: string): EggFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch (error) {
    fail(`the file is not JSON: ${(error as Error).message}`);
  }
  if (!isObject(parsed)) fail('the file is not an egg: its JSON is not an object');
  const meta = parsed['meta'];
  const version = isObject(meta) ? meta['version'] : undefined;
  const format = EGG_FORMATS.find((f) => f === version);
  if (format === undefined) {
    fail(`unrecognised egg format ${JSON.stringify(version ?? null)} (meta.version must be one of ${EGG_FORMATS.join(', ')})`);
  }

  const name = text191(parsed['name'], 'name', true);
  const author = optionalText(parsed['author'], 'author');
  const config = parsed['config'] ?? {};
  if (!isObject(config)) fail('config must be an object');
  const scripts = parsed['scripts'] ?? {};
  if (!isObject(scripts)) fail('scripts must be an object');
  const installation = scripts['installation'] ?? {};
  if (!isObject(installation)) fail('scripts.installation must be an object');

  return {
    format,
    uuid: eggUuid(parsed['uuid'], author, name),
    name,
    author,
    description: optionalText(parsed['description'], 'description'),
    docker_images: dockerImages(parsed, format),
    startup: startupCommand(parsed),
    config_stop: config['stop'] === undefined || config['stop'] === null ? null : text(config['stop'], 'config.stop'),
    done: doneLines(jsonMember(config['startup'], 'config.startup')),
    config_files: configFiles(jsonMember(config['files'], 'config.files')),
    file_denylist: stringList(parsed['file_denylist'], 'file_denylist').filter((entry) => entry !== ''),
    features: stringList(parsed['features'], 'features'),
    script_install: optionalText(installation['script'], 'scripts.installation.script'),
    script_container: optionalText(installation['container'], 'scripts.installation.container'),
    script_entrypoint: optionalText(installation['entrypoint'], 'scripts.installation.entrypoint'),
    variables: variables(parsed['variables']),
  };
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string') fail(`${field} must be a string`);
  return value;
}

function text191(value: unknown, field: string, required: boolean): string {
  const result = text(value, field).trim();
  if (required && result === '') fail(`${field} must not be empty`);
  if ([...result].length > 191) fail(`${field} must be at most 191 characters`);
  return result;
}

function optionalText(value: unknown, field: string): string {
  return value === undefined || value === null ? '' : text(value, field);
}

function stringList(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) fail(`${field} must be a list of strings`);
  return value as string[];
}

/**
 * The egg's uuid; an egg without one (PTDL_v1 files have none) gets one
 * derived from its author and name, so importing it again updates it as
 * Pterodactyl's seeder does (it matches on author and name).
 */
function eggUuid(value: unknown, author: string, name: string): string {
  if (value !== undefined && value !== null) {
    if (typeof value !== 'string' || !UUID.test(value)) fail('uuid must be a UUID');
    return value.toLowerCase();
  }
  const hash = createHash('sha1').update(`quetzal-egg\0${author}\0${name}`).digest('hex');
  const variant = ((parseInt(hash[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hash.slice(0, 8)}-${hash.slice(8, 12)}-5${hash.slice(13, 16)}-${variant}${hash.slice(17, 20)}-${hash.slice(20, 32)}`;
}

/** v1: `images` (a list) or `image` (one); later: `docker_images` (display name → image, or a list). */
function dockerImages(egg: Json, format: EggFile['format']): Record<string, string> {
  const images: Record<string, string> = {};
  const legacy = format === 'PTDL_v1' && egg['docker_images'] === undefined;
  if (legacy) {
    const list = egg['images'] !== undefined ? stringList(egg['images'], 'images') : [text(egg['image'] ?? '', 'image')];
    for (const image of list) if (image.trim() !== '') images[image.trim()] = image.trim();
  } else {
    let value = egg['docker_images'];
    // A few hand-edited PTDL_v2 files hold a plain list: each image is its own display name.
    if (Array.isArray(value)) value = Object.fromEntries(stringList(value, 'docker_images').map((i) => [i, i]));
    if (!isObject(value)) fail('docker_images must be an object of display name to image');
    for (const [label, image] of Object.entries(value)) {
      if (typeof image !== 'string' || image.trim() === '') fail(`docker_images["${label}"] must be an image name`);
      images[label] = image.trim();
    }
  }
  const names = Object.values(images);
  if (names.length === 0) fail('the egg names no docker image');
  for (const image of names) if (image.length > 191) fail(`docker image "${image}" is longer than 191 characters`);
  return images;
}

/** `startup`, or Pelican's `startup_commands` (PLCN_v3), of which the first is kept. */
function startupCommand(egg: Json): string {
  let startup = egg['startup'];
  if (startup === undefined && isObject(egg['startup_commands'])) startup = Object.values(egg['startup_commands'])[0];
  if (typeof startup !== 'string' || startup.trim() === '') fail('the egg has no startup command');
  return startup;
}

/** Exports hold `config.files`, `config.startup` and `config.logs` as JSON text; some hand-written eggs as objects. */
function jsonMember(value: unknown, field: string): Json | null {
  if (value === undefined || value === null) return null;
  if (isObject(value)) return value;
  if (Array.isArray(value) && value.length === 0) return null;
  if (typeof value !== 'string') fail(`${field} must be a JSON object or its text`);
  if (value.trim() === '') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    fail(`${field} is not valid JSON: ${(error as Error).message}`);
  }
  if (parsed === null || (Array.isArray(parsed) && parsed.length === 0)) return null;
  if (!isObject(parsed)) fail(`${field} must hold a JSON object`);
  return parsed;
}

/** `config.startup.done`: one line or several (any of them means "started"). */
function doneLines(startup: Json | null): string[] {
  const done = startup?.['done'];
  if (done === undefined || done === null) return [];
  if (typeof done === 'string') return done === '' ? [] : [done];
  if (Array.isArray(done) && done.every((d) => typeof d === 'string')) return (done as string[]).filter((d) => d !== '');
  fail('config.startup.done must be a string or a list of strings');
}

/**
 * `config.files`: file → {parser, find}. Entries without `find` are skipped,
 * as Pterodactyl's panel does; numbers and booleans become text (the daemon
 * types them back for yaml and json); a find value that is an object is
 * Wings' conditional replacement ("replace the value only if it is X"), kept.
 */
function configFiles(files: Json | null): Record<string, EggConfigFile> {
  const result: Record<string, EggConfigFile> = {};
  for (const [file, spec] of Object.entries(files ?? {})) {
    if (!isObject(spec) || !isObject(spec['find'])) continue;
    const parser = PARSERS[String(spec['parser'] ?? '').toLowerCase()];
    if (parser === undefined) fail(`config.files["${file}"] has an unknown parser ${JSON.stringify(spec['parser'] ?? null)}`);
    if (file === '' || file.split(/[\\/]/).includes('..') || file.startsWith('/')) {
      fail(`config.files["${file}"] must be a path inside the server's folder`);
    }
    const find: EggConfigFile['find'] = {};
    for (const [key, value] of Object.entries(spec['find'])) {
      if (isObject(value)) {
        const conditional: Record<string, string> = {};
        for (const [ifValue, replaceWith] of Object.entries(value)) {
          if (scalar(replaceWith)) conditional[ifValue] = String(replaceWith);
        }
        find[key] = conditional;
      } else if (scalar(value)) find[key] = String(value);
    }
    result[file] = { parser, find };
  }
  return result;
}

const scalar = (value: unknown): value is string | number | boolean =>
  typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

function variables(value: unknown): EggFileVariable[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) fail('variables must be a list');
  const seen = new Set<string>();
  return value.map((v: unknown, index) => {
    if (!isObject(v)) fail(`variables[${index}] must be an object`);
    const env = v['env_variable'];
    // Pterodactyl allows \w{1,191}; a leading digit could not be read back as $NAME by the shell.
    if (typeof env !== 'string' || !/^[A-Za-z_]\w{0,190}$/.test(env)) {
      fail(
        `variables[${index}].env_variable must be a shell variable name (letters, digits and _, not starting with a digit), got ${JSON.stringify(env ?? null)}`,
      );
    }
    if (RESERVED_ENV_NAMES.has(env.toUpperCase())) fail(`variable ${env} uses a name the panel sets itself`);
    if (seen.has(env)) fail(`variable ${env} appears twice`);
    seen.add(env);
    const rules = ruleList(v['rules'], env);
    return {
      name: text191(v['name'] ?? env, `variable ${env}'s name`, true),
      description: optionalText(v['description'], `variable ${env}'s description`),
      env_variable: env,
      default_value: defaultValue(v['default_value'], env),
      user_viewable: flag(v['user_viewable'], `variable ${env}'s user_viewable`),
      user_editable: flag(v['user_editable'], `variable ${env}'s user_editable`),
      rules,
      sort: typeof v['sort'] === 'number' && Number.isInteger(v['sort']) ? v['sort'] : index + 1,
    };
  });
}

function ruleList(value: unknown, env: string): string {
  let rules: string;
  if (value === undefined || value === null) rules = '';
  else if (typeof value === 'string') rules = value;
  else if (Array.isArray(value) && value.every((r) => typeof r === 'string')) rules = value.join('|');
  else fail(`variable ${env}'s rules must be a string or a list of strings`);
  try {
    parseRules(rules);
  } catch (error) {
    if (error instanceof VariableRulesError) fail(`variable ${env}: ${error.message}`);
    throw error;
  }
  return rules;
}

/** YAML and hand-written eggs give numbers and booleans; Pelican stores booleans as 'true'/'false'. */
function defaultValue(value: unknown, env: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  fail(`variable ${env}'s default_value must be a string`);
}

function flag(value: unknown, field: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1 || value === '0' || value === '1') return Number(value) === 1;
  fail(`${field} must be true or false`);
}
