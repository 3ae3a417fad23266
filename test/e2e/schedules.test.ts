import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { auditPage, eventually, launchBrowser, newPage, signIn, startConsoleService, type ConsoleService } from './helpers.js';

/**
 * Schedules in the console (docs/reference/schedules.md#schedules, docs/reference/schedules.md#tasks, docs/reference/web-console.md): create and edit with the cron
 * fields, the description and the next five runs worked out in the browser in
 * the panel's time zone (matching the server's next_run_at), tasks added,
 * reordered and deleted, run now, delete.
 */

const TIMEZONE = 'Europe/Paris';
let svc: ConsoleService;
let browser: Browser;
let server: { uuid: string; identifier: string };
let token: string;

interface ScheduleAttributes {
  id: number;
  name: string;
  cron: Record<string, string>;
  next_run_at: string | null;
  last_run_at: string | null;
  is_processing: boolean;
  relationships: { tasks: { data: { attributes: { sequence_id: number; payload: string } }[] } };
}

const api = async <T>(path: string): Promise<T> => {
  const res = await fetch(`${svc.base}/api/client${path}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
};

/** How the console writes a date-time (web/src/lib/format.ts), here in Node's ICU. */
const shown = (iso: string) =>
  new Intl.DateTimeFormat('en-GB', {
    weekday: 'short',
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    timeZone: TIMEZONE,
  }).format(new Date(iso));

beforeAll(async () => {
  [svc, browser] = await Promise.all([startConsoleService({ APP_TIMEZONE: TIMEZONE }), launchBrowser()]);
  await svc.user('grace', 'grace-password-1');
  server = await svc.cli(['server:create', '--owner', 'grace', '--name', 'Hopper']);
  ({ token } = await svc.cli<{ token: string }>(['key:create', '--user', 'grace']));
});

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

describe('the web console: schedules', () => {
  it('creates and edits a schedule, adds and reorders tasks, runs it now and deletes it', async () => {
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'grace', 'grace-password-1', `/server/${server.identifier}/schedules`);
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByLabel('Name').fill('Weekday restart');
    await page.getByLabel('Minute').fill('30');
    await page.getByLabel('Hour').fill('4');
    await page.getByLabel('Day of week').fill('1-5');
    await expect.poll(() => page.locator('.cron-description').textContent()).toBe('At 04:30, on Monday to Friday.');
    const nextRuns = page.getByRole('list', { name: 'Next runs' }).getByRole('listitem');
    expect(await nextRuns.count()).toBe(5);
    expect(await page.getByText(`When it runs (cron, in ${TIMEZONE})`).count()).toBe(1);

    // A field the panel would refuse is named before anything is sent.
    await page.getByLabel('Hour').fill('25');
    await expect.poll(() => page.locator('#cron-preview .error').textContent()).toMatch(/hour field/);
    await page.getByLabel('Hour').fill('4');
    const firstShown = await nextRuns.first().textContent();
    await page.getByRole('button', { name: 'Create schedule' }).click();

    await page.getByRole('heading', { name: 'Weekday restart' }).waitFor();
    const id = /\/schedules\/(\d+)$/.exec(new URL(page.url()).pathname)?.[1];
    expect(id).toBeDefined();
    const created = await api<{ attributes: ScheduleAttributes }>(`/servers/${server.identifier}/schedules/${id}`);
    expect(created.attributes.cron).toMatchObject({ minute: '30', hour: '4', day_of_week: '1-5' });
    // The browser's next run is the server's: same cron code, same time zone.
    expect(firstShown).toBe(shown(created.attributes.next_run_at!));

    // Edit: the hour moves, the description and next runs follow, the API has it.
    await page.getByLabel('Hour').fill('5');
    await expect.poll(() => page.locator('.cron-description').textContent()).toBe('At 05:30, on Monday to Friday.');
    await page.getByRole('button', { name: 'Save schedule' }).click();
    await page.getByText('Saved.').waitFor();
    const edited = await api<{ attributes: ScheduleAttributes }>(`/servers/${server.identifier}/schedules/${id}`);
    expect(edited.attributes.cron.hour).toBe('5');
    expect(await page.getByRole('list', { name: 'Next runs' }).getByRole('listitem').first().textContent()).toBe(
      shown(edited.attributes.next_run_at!),
    );

    // Tasks: two added, the second moved up.
    await page.getByRole('button', { name: 'New task' }).click();
    await page.getByLabel('Payload: command').fill('say first');
    const taskList = page.getByRole('list', { name: 'Tasks' });
    await page.getByRole('button', { name: 'Add task' }).click();
    await taskList.getByText('say first').waitFor();
    await page.getByLabel('Action').selectOption('power');
    await page.getByLabel('Payload: power action').selectOption('restart');
    await page.getByLabel('Time offset (seconds)').fill('5');
    await page.getByLabel('Continue on failure').check();
    await page.getByRole('button', { name: 'Add task' }).click();
    await taskList.getByText('restart the server', { exact: true }).waitFor();
    const tasks = taskList.getByRole('listitem');
    expect(await tasks.count()).toBe(2);
    await page.getByRole('button', { name: 'Move task 2 up' }).click();
    await expect.poll(() => tasks.first().textContent()).toMatch(/^1\. Send a power action/);
    const reordered = await api<{ attributes: ScheduleAttributes }>(`/servers/${server.identifier}/schedules/${id}`);
    expect(reordered.attributes.relationships.tasks.data.map((t) => [t.attributes.sequence_id, t.attributes.payload])).toEqual([
      [1, 'restart'],
      [2, 'say first'],
    ]);

    // Edit a task in place.
    await page.getByRole('button', { name: 'Edit task 2' }).click();
    await page.getByLabel('Payload: command').fill('say edited');
    await page.getByRole('button', { name: 'Save task' }).click();
    await taskList.getByText('say edited').waitFor();
    await auditPage(page, 'schedule');

    // Run now: accepted, and the run happens (last_run_at set once it is over).
    await page.getByRole('button', { name: 'Run now' }).click();
    await page.getByText('The run has started.').waitFor();
    await eventually(async () => {
      const { attributes } = await api<{ attributes: ScheduleAttributes }>(`/servers/${server.identifier}/schedules/${id}`);
      return attributes.last_run_at !== null && !attributes.is_processing;
    }, 15_000);
    const activity = await api<{ data: { attributes: { event: string } }[] }>(`/servers/${server.identifier}/activity`);
    expect(activity.data.map((entry) => entry.attributes.event)).toEqual(
      expect.arrayContaining(['server:schedule.execute', 'server:schedule.run']),
    );

    // Delete a task, then the schedule, each after a confirmation.
    await page.getByRole('button', { name: 'Delete task 1' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => tasks.count()).toBe(1);
    await page.getByRole('link', { name: '← All schedules' }).click();
    await page.getByRole('list', { name: 'Schedules' }).waitFor();
    await page.getByRole('list', { name: 'Schedules' }).getByText('At 05:30, on Monday to Friday.').waitFor();
    await auditPage(page, 'schedules');
    await page.getByRole('link', { name: 'Weekday restart' }).click();
    await page.getByRole('button', { name: 'Delete schedule' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Delete schedule' }).click();
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No schedules yet.').waitFor();
    expect((await api<{ data: unknown[] }>(`/servers/${server.identifier}/schedules`)).data).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("keeps each refusal in the form that sent it, and says 'Saved.' only while the fields are what was saved", async () => {
    // Backups off, so that a backup task is the API's to refuse.
    const noBackups = await svc.cli<{ identifier: string }>([
      'server:create',
      '--owner',
      'grace',
      '--name',
      'No backups',
      '--backup-limit',
      '0',
    ]);
    const { page, errors, context } = await newPage(browser);
    await signIn(page, svc.base, 'grace', 'grace-password-1', `/server/${noBackups.identifier}/schedules`);
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByLabel('Name').fill('Refusals');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await page.getByRole('heading', { name: 'Refusals' }).waitFor();
    const id = /\/schedules\/(\d+)$/.exec(new URL(page.url()).pathname)?.[1];
    const stored = async () =>
      (await api<{ attributes: ScheduleAttributes }>(`/servers/${noBackups.identifier}/schedules/${id}`)).attributes;

    // The schedule form: an hour the API refuses is its alert, and nothing is saved.
    const scheduleForm = page.locator('form.schedule-form');
    await page.getByLabel('Hour').fill('25');
    await page.getByRole('button', { name: 'Save schedule' }).click();
    await scheduleForm.getByRole('alert').waitFor();
    expect(await scheduleForm.getByRole('alert').textContent()).toMatch(/hour/i);
    expect((await stored()).cron.hour).toBe('*');
    // Corrected and saved: the alert goes, "Saved." comes, and goes again with the next keystroke.
    await page.getByLabel('Hour').fill('6');
    await page.getByRole('button', { name: 'Save schedule' }).click();
    await scheduleForm.getByText('Saved.').waitFor();
    expect(await scheduleForm.getByRole('alert').count()).toBe(0);
    expect((await stored()).cron.hour).toBe('6');
    await page.getByLabel('Name').fill('Refusals, renamed');
    await scheduleForm.getByText('Saved.').waitFor({ state: 'detached' });

    // The task form: a backup task on a server without backups is refused in the form, which keeps what was typed.
    await page.getByRole('button', { name: 'New task' }).click();
    const taskForm = page.locator('form.task-form');
    await page.getByLabel('Action').selectOption('backup');
    await page.getByLabel('Payload: ignored files (one pattern per line, optional)').fill('*.log');
    await page.getByRole('button', { name: 'Add task' }).click();
    await taskForm.getByRole('alert').waitFor();
    expect(await taskForm.getByRole('alert').textContent()).toMatch(/backups are not enabled/i);
    expect(await page.getByLabel('Payload: ignored files (one pattern per line, optional)').inputValue()).toBe('*.log');
    expect((await stored()).relationships.tasks.data).toEqual([]);
    // Another action, accepted: the form empties for the next task and keeps its action.
    await page.getByLabel('Action').selectOption('command');
    await page.getByLabel('Payload: command').fill('say saved');
    await page.getByLabel('Time offset (seconds)').fill('30');
    await page.getByRole('button', { name: 'Add task' }).click();
    await page.getByRole('list', { name: 'Tasks' }).getByText('say saved').waitFor();
    expect(await taskForm.getByRole('alert').count()).toBe(0);
    expect(await page.getByLabel('Action').inputValue()).toBe('command');
    expect(await page.getByLabel('Payload: command').inputValue()).toBe('');
    expect(await page.getByLabel('Time offset (seconds)').inputValue()).toBe('0');
    expect((await stored()).relationships.tasks.data.map((task) => task.attributes.payload)).toEqual(['say saved']);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("shows the API's error where it happened: running a schedule without tasks", async () => {
    const { page, context } = await newPage(browser);
    await signIn(page, svc.base, 'grace', 'grace-password-1', `/server/${server.identifier}/schedules`);
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByLabel('Name').fill('Empty');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await page.getByRole('heading', { name: 'Empty' }).waitFor();
    await page.getByRole('button', { name: 'Run now' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/task/i);
    await context.close();
  });
});
