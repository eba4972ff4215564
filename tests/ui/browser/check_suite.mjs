// tests/ui/browser/check_suite.mjs: the run page of a whole test suite (one
// `heapledger daemon` run of about 90 processes) in Debian's chromium, and
// the same run's HTML report, checked against what the database holds. Run
// by tests/ui/check_ui_suite.py, which made the run, the expectations and
// the server.
//
// Usage: node check_suite.mjs EXPECT.json SCREENSHOT_DIR
import { launchBrowser, watch as watchInto } from './harness.mjs';
import fs from 'node:fs';
import path from 'node:path';

const expect = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const shots = process.argv[3];
const problems = [];

function check(ok, what) {
  if (!ok) throw new Error(what);
}

async function ready(page) {
  await page.waitForSelector('body[data-ready]', { timeout: 60000 });
  const err = await page.locator('#app > p.error').count();
  check(err === 0, 'the page shows an error: ' + (err ? await page.locator('#app > p.error').innerText() : ''));
}

function watch(page) {
  watchInto(page, problems);
}

// A byte count as the page writes it (app.js bytes()).
function bytes(n) {
  if (n < 1024) return n + ' B';
  const units = ['KiB', 'MiB', 'GiB'];
  let v = n / 1024, u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return v.toFixed(1) + ' ' + units[u];
}

// Every test with its name, processes, argv, how it ended and its counts,
// as the database has them; "show all" opens the whole table first.
async function testsTable(page) {
  const all = page.locator('#tests').locator('xpath=..').locator('button.show-all');
  if (await all.count()) await all.click();
  const rows = await page.$$eval('#tests tr.test', trs => trs.map(r => ({
    name: r.dataset.test, procs: +r.cells[1].textContent, argv: r.querySelector('.argv').textContent,
    ended: r.cells[2].textContent, lost: +r.dataset.lost, records: +r.cells[4].textContent,
    errors: +r.cells[5].textContent })));
  const shown = Object.fromEntries(rows.map(r => [r.name, r]));
  for (const [name, t] of Object.entries(expect.tests)) {
    const r = shown[name];
    check(r, `test ${name} is listed: ${rows.map(x => x.name)}`);
    check(r.procs === t.procs, `test ${name}: ${r.procs} processes, the database ${t.procs}`);
    check(r.argv.endsWith(t.argv.split('/').pop()) && r.argv.includes(t.argv.split(' ')[0].split('/').pop()),
      `test ${name}'s command: ${r.argv}, want ${t.argv}`);
    check(r.lost === t.bytes && r.records === t.records && r.errors === t.errors,
      `test ${name}: ${r.lost} B in ${r.records} records, ${r.errors} errors; the database ${JSON.stringify(t)}`);
  }
  // How a test ended, in words: the runner's view against the page's.
  const ended = n => shown[n].ended;
  check(/SIGABRT/.test(ended('end_abort')), 'end_abort: ' + ended('end_abort'));
  check(/SIGSEGV/.test(ended('end_null')), 'end_null: ' + ended('end_null'));
  check(ended('end_exit3') === 'exit 3' && ended('end_return7') === 'exit 7', 'exit statuses: ' +
    ended('end_exit3') + ', ' + ended('end_return7'));
  // A process whose stream ended without its exit record (SIGKILL, a
  // runner's SIGTERM that lands inside the hook, which lets the default
  // action end the process unreported) is said to be so, not "unknown". The
  // SIGTERM lands outside the hook's calls in some runs (the loop's own
  // instructions): then the hook reports it, and the page says SIGTERM.
  for (const n of ['end_sigkill', 'kill9_loop'])
    check(/no exit record/.test(ended(n)) && !/unknown/.test(ended(n)), `${n} (${expect.tests[n].ended}): "${ended(n)}"`);
  check((/no exit record/.test(ended('timeout_loop')) || /SIGTERM/.test(ended('timeout_loop'))) &&
    !/unknown/.test(ended('timeout_loop')), `timeout_loop (${expect.tests.timeout_loop.ended}): "${ended('timeout_loop')}"`);
  // The failing first: heap errors, processes not seen to their end, then
  // what leaks.
  const failing = r => r.errors || r.records || /no exit record/.test(r.ended);
  const firstClean = rows.findIndex(r => !failing(r));
  check(firstClean > 0 && rows.slice(firstClean).every(r => !failing(r)),
    'tests that fail come before clean ones: ' + rows.map(r => r.name).join(' '));
  check(rows.findIndex(r => /no exit record/.test(r.ended)) < rows.findIndex(r => !r.errors && r.records && !/no exit record/.test(r.ended)),
    'a test not seen to its end comes before the tests that only leak: ' + rows.map(r => r.name).join(' '));
  await page.locator('#tests').screenshot({ path: path.join(shots, 'suite-tests-all.png') });
}

// Each process of the tree names its test and what it leaked; its bytes
// and records are the database's (lost classes, not suppressed).
async function processTree(page) {
  const all = page.locator('#process-tree').locator('xpath=..').locator('button.show-all');
  if (await all.count()) await all.click();
  const items = await page.$$eval('#process-tree li', lis => lis.map(li => ({
    id: +li.dataset.process, test: li.querySelector(':scope > .test-name')?.textContent || '',
    text: li.firstChild.textContent + [...li.childNodes].slice(1).filter(n => n.nodeType === 3).map(n => n.textContent).join('') })));
  check(items.length === expect.processes, `the tree lists ${items.length} processes of ${expect.processes}`);
  for (const it of items) {
    const p = expect.by_process[it.id];
    check(p, 'a tree item is a process of the run: ' + JSON.stringify(it));
    if (p.test) check(it.test === `test ${p.test}: `, `process ${it.id} names its test ${p.test}: ${it.test}`);
    check(it.text.includes(`${bytes(p.bytes)} leaked in ${p.records} records`),
      `process ${it.id} (pid ${p.pid}): "${it.text}", the database ${p.bytes} B in ${p.records} records`);
  }
}

// The leak table a row per loss record, n of them.
async function byRecord(page, n) {
  await page.selectOption('#leak-group', 'record');
  await page.waitForFunction(n => /of (\d+)/.test(document.querySelector('#leaks-box .pager').textContent) &&
    +document.querySelector('#leaks-box .pager').textContent.match(/of (\d+)/)[1] === n &&
    document.querySelector('#leak-group').value === 'record', n, { timeout: 20000 }).catch(() => {});
}

// The leak table opens on what leaks (no still reachable, no suppressed),
// every row names its test and is placed in the test's own code, never
// libc's start; one click shows every record.
async function leakTable(page) {
  const total = async () => +(await page.locator('#leaks-box .pager').innerText()).match(/of (\d+)/)[1];
  // By default a row per leak site, each site's processes added up; a row
  // per record one choice away.
  check(await total() === expect.lost_sites, `the default leak view holds ${await total()} sites, what leaks: ${expect.lost_sites}`);
  // A site in several tests says how many besides the one named.
  const sites = await page.$$eval('#leaks tr.leak', trs => trs.map(r => ({ site: r.dataset.site,
    cls: r.querySelector('[data-class]').dataset.class, test: r.querySelector('td.test').textContent })));
  let several = 0;
  for (const r of sites) {
    const n = expect.site_tests[`${r.site}|${r.cls}`];
    if (!n) continue;
    several += n > 1;
    const more = n > 1 ? ` and ${n - 1} other test${n === 2 ? '' : 's'}` : '';
    check(more ? r.test.endsWith(more) : !r.test.includes('other test'), `site ${r.site} in ${n} tests: "${r.test}"`);
  }
  check(several > 0, 'some site of the suite leaks in several tests: ' + JSON.stringify(sites.slice(0, 5)));
  await byRecord(page, expect.lost_records);
  check(await total() === expect.lost_records, `by record, the leak view holds ${await total()} records, what leaks: ${expect.lost_records}`);
  const rows = await page.$$eval('#leaks tr.leak', trs => trs.map(r => ({
    cls: r.querySelector('[data-class]').dataset.class, process: +r.dataset.process,
    test: r.querySelector('td.test')?.textContent, where: r.querySelector('.where').textContent })));
  check(rows.length > 0 && rows.every(r => r.cls !== 'reachable' && r.cls !== 'suppressed'),
    'the default view shows no still reachable or suppressed record: ' + JSON.stringify(rows.filter(r => r.cls === 'reachable').slice(0, 3)));
  for (const r of rows) {
    const p = expect.by_process[r.process];
    check(p, 'a leak row names its process: ' + JSON.stringify(r));
    check(r.test === (p.test || ''), `a leak row names its test ${p.test}: ${JSON.stringify(r)}`);
    check(!/libc_start|_start\b/.test(r.where), 'where is never the C runtime\'s start: ' + r.where);
  }
  const nodebug = rows.filter(r => /^nodebug_/.test(r.test));
  check(nodebug.length > 0 && nodebug.every(r => r.where.includes('ui_nodebug+0x')),
    'without debug information, where is module+offset: ' + JSON.stringify(nodebug));
  // deep_leak's stack, 300 calls deep, is cut at the default 256 frames, the
  // most the hook captures: the page says where, and that no depth keeps more.
  await page.locator('#leaks tr.leak', { hasText: 'deep_leak' }).first().click();
  const cut = page.locator('#leaks tr.leak-stack:not([hidden]) .stack-cut').first();
  await cut.waitFor({ timeout: 10000 }).catch(() => {});
  const said = await cut.count() ? await cut.innerText() : await page.locator('#leaks tr.leak-stack:not([hidden])').first().innerText();
  check(said.includes('stack truncated at 256 frames, the most heapledger captures'),
    'a cut stack says where it was cut: ' + said.slice(-300));
  await page.locator('#leaks-box').screenshot({ path: path.join(shots, 'suite-leaks.png') });
  await page.evaluate(() => document.body.removeAttribute('data-ready'));
  await page.click('#leak-show-all');
  await page.waitForFunction(n => /of (\d+)/.test(document.querySelector('#leaks-box .pager').textContent) &&
    +document.querySelector('#leaks-box .pager').textContent.match(/of (\d+)/)[1] === n, expect.all_records, { timeout: 20000 })
    .catch(async () => check(false, `after one click the table holds ${await total()} records, the run ${expect.all_records}`));
}

// The charts open on the process that leaked most, named by its test.
async function chartsPick(page) {
  const picked = await page.$eval('#process-pick', s => s.selectedOptions[0].textContent);
  const l = expect.leakiest;
  check(picked.includes(`pid ${l.pid}`) && picked.includes(`test ${l.test}`),
    `the charts open on the leakiest process, pid ${l.pid} of test ${l.test}: ${picked}`);
  check((await page.locator('#process-views h2').first().innerText()).includes(`test ${l.test}`),
    'the charts\' headings name the test: ' + await page.locator('#process-views h2').first().innerText());
  // many_leak runs for well under a millisecond: its time ticks are in
  // ms or µs and tell the samples apart, never a row of "0 s".
  await page.waitForFunction(() => window.hlCharts.timeline, null, { timeout: 20000 });
  const x = await page.evaluate(() => window.hlCharts.timeline.axes[0]._values || []);
  check(x.length > 1 && new Set(x).size === x.length && x.every(v => / (s|ms|µs)$/.test(v)),
    'the heap chart\'s time ticks: ' + JSON.stringify(x));
}

// Each heap error names its test; the heap summary names each process's.
async function errorsAndSummary(page) {
  const tests = await page.$$eval('#errors-box .heap-error', els => els.map(e => e.dataset.test));
  check(JSON.stringify(tests) === JSON.stringify(expect.errors), `heap errors by test ${tests}, the database ${expect.errors}`);
  const named = await page.$$eval('#summary tr[data-process]', trs => trs.map(r => [+r.dataset.process,
    r.querySelector('td.test').textContent]));
  check(named.length > 0, 'the heap summary has a row per process');
  for (const [id, test] of named)
    check(test === (expect.by_process[id].test || ''), `heap summary row ${id}: test "${test}"`);
}

// The summary's blocks by class: the database's bytes and blocks, each
// class once, suppressed apart.
async function summaryChips(page) {
  const chips = await page.$$eval('#leaked-by-class .chip[data-class]', els => els.map(e => [e.dataset.class, e.textContent]));
  check(chips.length === Object.keys(expect.by_class).length, 'summary classes ' + JSON.stringify(chips) + ', the database ' +
    JSON.stringify(expect.by_class));
  for (const [cls, text] of chips) {
    const [b, n] = expect.by_class[cls] || [];
    check(text.endsWith(`: ${bytes(b)} in ${n.toLocaleString('en-US')} block${n === 1 ? '' : 's'}`), `summary ${cls}: "${text}", the database ${b} B in ${n} blocks`);
  }
}

// The peak consumers' heading names the process that peaked by program
// (and test, when a runner named it), not by pid alone.
async function peakHeading(page) {
  const heading = await page.locator('#peak-stacks').locator('xpath=..').locator('h3').innerText();
  const [pid, exe, test] = expect.peak;
  const want = `pid ${pid} (${exe.split('/').pop()}${test ? ', test ' + test : ''})`;
  check(heading.includes(want), `peak consumers: "${heading}", want "${want}"`);
}

async function runPage(browser) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  watch(page);
  await page.goto(expect.url + '#/run/1');
  await ready(page);
  await page.screenshot({ path: path.join(shots, 'suite-run.png'), fullPage: true });
  await summaryChips(page);
  await peakHeading(page);
  await testsTable(page);
  await chartsPick(page);
  await errorsAndSummary(page);
  await processTree(page);
  await leakTable(page);
  await page.close();
}

// The run's HTML report, opened from its file: the same tests, what leaks
// inline, and the records it left out said with how to see them.
async function htmlReport(browser) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  watch(page);
  await page.goto('file://' + expect.report);
  await ready(page);
  const total = +(await page.locator('#leaks-box .pager').innerText()).match(/of (\d+)/)[1];
  check(total === expect.lost_sites, `the report's leak view: ${total} sites, what leaks ${expect.lost_sites}`);
  await byRecord(page, expect.lost_records);
  const records = +(await page.locator('#leaks-box .pager').innerText()).match(/of (\d+)/)[1];
  check(records === expect.lost_records, `the report's leak view by record: ${records} records, what leaks ${expect.lost_records}`);
  check(await page.locator('#tests tr.test').count() > 0, 'the report lists the tests');
  const row = page.locator('#leaks tr.leak').first();
  await row.click();
  await page.locator('#leaks tr.leak-stack:not([hidden]) .stack .frame').first().waitFor({ timeout: 10000 });
  await page.click('#leak-show-all');
  const said = await page.locator('#leaks-box').innerText();
  check(said.includes(`${expect.reachable_records} still reachable records are not in this file`),
    'the report says which records it left out: ' + said.slice(0, 400));
  await page.screenshot({ path: path.join(shots, 'suite-report.png') });
  await page.close();
}

const browser = await launchBrowser();
let failed = null;
try {
  await runPage(browser);
  await htmlReport(browser);
  check(problems.length === 0, problems.join('\n'));
} catch (e) {
  failed = e;
} finally {
  await browser.close();
}
if (failed) {
  console.log('FAIL: ' + failed.message);
  process.exit(1);
}
console.log('suite: every check passed; screenshots in ' + shots);
