// tests/ui/browser/check_sites.mjs: the summary of a run whose processes
// share their leak sites, in headless chromium (playwright-core): the "top
// leak sites" and "most allocations" cards hold one row per site, with its
// bytes, blocks and processes added up over the run as the query layer
// answered (EXPECT); the leak table a row per site by default, a row per
// process's record one choice away. Run by tests/ui/check_ui_sites.py, which made the
// database and the server.
//
// Usage: node check_sites.mjs EXPECT.json SCREENSHOT_DIR
// EXPECT: {url, runs, many: {value, count, processes}, direct: {...}}
import { launchBrowser, newWatchedPage } from './harness.mjs';
import fs from 'node:fs';
import path from 'node:path';

const expect = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const shots = process.argv[3];
const problems = [];

function check(ok, what) {
  if (!ok) problems.push(what);
}

const browser = await launchBrowser();
try {
  const page = await newWatchedPage(browser, problems);
  await page.goto(expect.url + '#/run/1');
  await page.waitForSelector('body[data-ready]', { timeout: 30000 });

  // The verdict's failing processes, in words that agree with their
  // numbers: leak_direct's one block is "1 block".
  const failing = await page.locator('#run-summary .failing li').allInnerTexts();
  check(failing.some(t => t.includes('leak_direct): 64 B in 1 block, 0 heap errors')) &&
    failing.some(t => t.includes('leak_many): 15.6 KiB in 1,000 blocks, 0 heap errors')) &&
    !failing.some(t => /\b1 blocks\b/.test(t)), 'the failing processes: ' + JSON.stringify(failing));
  const table = id => page.$$eval(`#${id} tr`, trs => trs.map(tr =>
    [...tr.querySelectorAll('th, td')].map(c => c.querySelector('.fn')?.textContent || c.textContent)));
  const sites = await table('top-sites');
  check(JSON.stringify(sites[0]) === JSON.stringify(['where', 'bytes', 'blocks', 'processes']),
    'top sites header: ' + JSON.stringify(sites[0]));
  const rowOf = (rows, fn) => rows.filter(r => r[0] === fn);
  const many = rowOf(sites, 'leak_many'), direct = rowOf(sites, 'leak_direct');
  check(many.length === 1 && direct.length === 1, 'top sites, one row each: ' + JSON.stringify(sites));
  const kib = n => (n / 1024).toFixed(1) + ' KiB'; // the sites here are 1..1023 KiB
  check(many[0] && many[0][1] === kib(expect.many.value) &&
    many[0][2] === expect.many.count.toLocaleString('en-US') && many[0][3] === String(expect.runs),
    `leak_many row ${JSON.stringify(many[0])}, want ${expect.many.value} B, ${expect.many.count} blocks, ${expect.runs} processes`);
  check(direct[0] && direct[0][2] === String(expect.direct.count) && direct[0][3] === String(expect.runs),
    `leak_direct row ${JSON.stringify(direct[0])}`);

  const allocs = await table('most-allocations');
  const a = rowOf(allocs, 'leak_many');
  check(a.length === 1 && a[0][1] === (expect.runs * 1000).toLocaleString('en-US') && a[0][2] === String(expect.runs),
    'most allocations, leak_many once in every process: ' + JSON.stringify(allocs));
  await page.locator('#run-summary').screenshot({ path: path.join(shots, 'summary-sites.png') });

  // The leak table: a row per site by default, named by its processes.
  const leaks = await page.$$eval('#leaks tr.leak', trs => trs.map(tr =>
    [tr.cells[0].textContent, tr.querySelector('.where .fn').textContent, tr.cells[2].textContent, tr.cells[3].textContent]));
  check(JSON.stringify(leaks) === JSON.stringify([
    [`${expect.runs} processes`, 'leak_many', kib(expect.many.value), expect.many.count.toLocaleString('en-US')],
    [`${expect.runs} processes`, 'leak_direct', `${expect.direct.value} B`, String(expect.direct.count)]]),
  'the leak table by site: ' + JSON.stringify(leaks));
  await page.locator('#leaks-box').screenshot({ path: path.join(shots, 'leaks-by-site.png') });
  await page.selectOption('#leak-group', 'record');
  await page.waitForFunction(n => document.querySelectorAll('#leaks tr.leak').length === n, 2 * expect.runs,
    { timeout: 10000 }).catch(() => {});
  check(await page.locator('#leaks tr.leak').count() === 2 * expect.runs, 'by record, a row per process');
} finally {
  await browser.close();
}
if (problems.length) {
  console.log('FAIL:\n  ' + problems.join('\n  '));
  process.exit(1);
}
console.log('ok: one row per site, in ' + expect.runs + ' processes');
