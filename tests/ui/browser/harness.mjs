// tests/ui/browser/harness.mjs: what every browser test does the same way:
// start Debian's headless chromium through playwright-core, and open pages
// whose script errors and console errors count as failures. Copied beside
// each check_*.mjs by check_ui_browser.prepare_browser().
import { chromium } from 'playwright-core';

export async function launchBrowser() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

// Adds a page's script errors and console errors to `problems`.
export function watch(page, problems) {
  page.on('pageerror', e => problems.push('page error: ' + e.message));
  page.on('console', m => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
}

// A 1280x900 page of `browser`, watched.
export async function newWatchedPage(browser, problems) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  watch(page, problems);
  return page;
}
