/**
 * A real browser for tests: Debian's Chromium driven by playwright-core. Nothing is downloaded;
 * when /usr/bin/chromium (or CHROMIUM_PATH) is missing the caller is told how to install it.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `no Chromium at ${CHROMIUM_PATH}: install it with "apt-get install -y chromium" (or set CHROMIUM_PATH)`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}

/**
 * The natural width of the image `selector` finds on `page` once it has loaded, as the browser
 * shows it: -1 when it could not be loaded, -2 when there is no such image.
 */
export function shownImageWidth(page: Page, selector: string): Promise<number> {
  // A string, evaluated in the page: this package is not typed for the DOM.
  return page.evaluate(`new Promise((resolve) => {
    const img = document.querySelector(${JSON.stringify(selector)});
    if (img === null) resolve(-2);
    else if (img.complete) resolve(img.naturalWidth || -1);
    else { img.onload = () => resolve(img.naturalWidth); img.onerror = () => resolve(-1); }
  })`);
}
