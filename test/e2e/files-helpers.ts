import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { ROOT } from '../platform/service-process.js';

/**
 * What the Files end-to-end tests share: where a folder's grid and its rows
 * are, a drop of real File objects on the page (as a desktop's drag and drop
 * delivers them), and the screenshots kept in docs/screenshots.
 */

export const SCREENSHOTS = path.join(ROOT, 'docs/screenshots');

export const grid = (page: Page) => page.getByRole('grid');
/** The rows in the DOM now (the header row excluded): the virtualised list renders only those near the view. */
export const renderedRows = (page: Page) => page.locator('[role="grid"] [role="rowgroup"] [role="row"]');
export const row = (page: Page, name: string) => renderedRows(page).filter({ has: page.getByText(name, { exact: true }) });

export async function selectEntry(page: Page, name: string): Promise<void> {
  await page.getByRole('checkbox', { name: `Select ${name}`, exact: true }).check();
}

/** Drops files (name → bytes, made in the page) on the Files section, with dragenter/dragover first as a browser does. */
export async function dropFiles(page: Page, files: Record<string, number>): Promise<void> {
  // In-page code as text: this project's TypeScript has no DOM types.
  await page.evaluate(`(() => {
    const files = ${JSON.stringify(files)};
    const transfer = new DataTransfer();
    for (const [name, size] of Object.entries(files)) {
      const bytes = new Uint8Array(size);
      for (let i = 0; i < size; i++) bytes[i] = (i * 31 + name.length) & 0xff;
      transfer.items.add(new File([bytes], name, { type: 'application/octet-stream' }));
    }
    const target = document.querySelector('section.files');
    for (const type of ['dragenter', 'dragover', 'drop'])
      target.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: transfer }));
  })()`);
}

/** The bytes dropFiles makes for a file of that name and size. */
export function droppedBytes(name: string, size: number): Buffer {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + name.length) & 0xff;
  return bytes;
}

/** Screenshots of the page as it is, at 1280 px and at 375 px wide, into docs/screenshots/<name>.png and <name>-375.png. */
export async function screenshots(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const size = page.viewportSize() ?? { width: 1280, height: 800 };
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });
  await page.setViewportSize({ width: 375, height: 812 });
  try {
    await page.waitForFunction('window.innerWidth === 375');
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-375.png`) });
  } finally {
    await page.setViewportSize(size);
  }
}
