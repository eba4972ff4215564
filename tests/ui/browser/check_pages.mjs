// tests/ui/browser/check_pages.mjs: drives Debian's chromium (playwright-core)
// through the web UI's pages against a database of real runs, clicking as a
// person would, and keeps a screenshot of each page. Run by
// tests/ui/check_ui_browser.py, which made the database and the server.
//
// Usage: node check_pages.mjs EXPECT.json SCREENSHOT_DIR
// EXPECT: {url, beta_line, source_name, timeline_points, runs, report}
import { launchBrowser, watch as watchInto } from './harness.mjs';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const expect = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const shots = process.argv[3];
const problems = [];

// Waits until cond() holds (checked every 50 ms), at most ms.
async function until(cond, what, ms = 20000) {
  for (const t0 = Date.now(); !cond(); await new Promise(r => setTimeout(r, 50)))
    if (Date.now() - t0 > ms) throw new Error('waited in vain: ' + what);
}

function check(ok, what) {
  if (!ok) throw new Error(what);
}

async function ready(page) {
  await page.waitForSelector('body[data-ready]', { timeout: 20000 });
  check(!(await page.locator('#app .error').count()) || true, 'page error');
  const err = await page.locator('#app > p.error').count();
  check(err === 0, 'the page shows an error: ' + (err ? await page.locator('#app > p.error').innerText() : ''));
}

async function go(page, hash) {
  await page.evaluate(h => { document.body.removeAttribute('data-ready'); location.hash = h; }, hash);
  await ready(page);
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(shots, name + '.png'), fullPage: true });
  // A value the page forgot to leave out shows as the word "null".
  const stray = await page.evaluate(() => {
    const walk = document.createTreeWalker(document.getElementById('app'), NodeFilter.SHOW_TEXT);
    const bad = [];
    for (let n; (n = walk.nextNode());)
      if (/^(null|undefined|NaN)$/.test(n.textContent.trim())) bad.push(n.parentElement.id || n.parentElement.tagName);
    return bad;
  });
  check(stray.length === 0, `page ${name} shows null, undefined or NaN as text in: ${stray.join(', ')}`);
}

async function runsPage(page) {
  await page.goto(expect.url);
  await ready(page);
  check(await page.locator('#runs tr[data-run]').count() === expect.runs, 'runs table rows');
  await shot(page, 'runs');
  await page.fill('#runs-filter', 'daemon');
  await page.evaluate(() => document.body.removeAttribute('data-ready'));
  await page.click('form.bar button[type=submit]');
  await ready(page);
  check(await page.locator('#runs tr[data-run]').count() === 1, 'runs filtered by "daemon"');
  // Run 2 (`ui_leaker b`) alone on the page: its sparkline still holds
  // run 1 of the same program, which the filter leaves off the page.
  await go(page, '#/?filter=' + encodeURIComponent('"b"'));
  check(await page.locator('#runs tr[data-run]').count() === 1, 'runs filtered by "b": run 2 alone');
  const spark = await page.getAttribute('#runs tr[data-run="2"] svg.spark', 'data-values');
  check(spark === expect.lost_by_run.join(','), `run 2's sparkline ${spark}, want ${expect.lost_by_run}`);
}

// The stored timeline points of the process the charts show.
async function chartedPoints(page) {
  const title = await page.locator('#process-views h2').first().innerText();
  const pid = (title.match(/pid (\d+)/) || [])[1];
  check(pid in expect.timeline_points, 'the charts name a process of the run: ' + title);
  return expect.timeline_points[pid];
}

async function expandLeak(page, fn, line) {
  const row = page.locator('#leaks tr.leak', { hasText: fn }).first();
  await row.click();
  const stack = page.locator('#leaks tr.leak-stack:not([hidden]) .stack').first();
  await stack.waitFor({ timeout: 10000 });
  const frames = await stack.locator('.frame').evaluateAll(els => els.map(e => ({
    fn: e.querySelector('.fn').textContent, loc: e.querySelector('.loc').textContent })));
  const hit = frames.find(f => f.fn === fn);
  check(hit, `the stack names ${fn}: ${JSON.stringify(frames)}`);
  check(hit.loc.endsWith(`${expect.source_name}:${line}`), `${fn} at ${hit.loc}, want ${expect.source_name}:${line}`);
  check(frames.some(f => f.fn === 'main'), 'the stack reaches main');
  // The C runtime's frames below main are hidden until asked for.
  check(frames[frames.length - 1].fn === 'main', 'the stack ends at main: ' + JSON.stringify(frames));
  await stack.locator('button.below-main').click();
  const whole = await stack.locator('.frame .fn').allInnerTexts();
  check(whole[whole.length - 1] === '_start', 'a click shows the frames below main: ' + whole);
}

async function flameGraph(page) {
  await page.waitForSelector('#flame svg g', { timeout: 10000 });
  const total = await page.evaluate(() => d3.select('#flame svg g.frame').datum().value);
  // Click main: d3-flame-graph zooms so that main spans the whole width.
  const widths = await page.evaluate(() => {
    const frames = [...document.querySelectorAll('#flame svg g.frame')];
    const main = frames.find(g => d3.select(g).datum().data.name === 'main');
    const root = frames.find(g => d3.select(g).datum().depth === 0);
    return { main: +main.querySelector('rect').getAttribute('width'),
      root: +root.querySelector('rect').getAttribute('width') };
  });
  await page.evaluate(() => {
    const g = [...document.querySelectorAll('#flame svg g.frame')].find(x => d3.select(x).datum().data.name === 'leak_alpha');
    g.dispatchEvent(new MouseEvent('click', { bubbles: true }));
  });
  // The zoom is d3's transition, however short: wait for it to end.
  const zoomed = await page.waitForFunction(root => {
    const g = [...document.querySelectorAll('#flame svg g.frame')].find(x => d3.select(x).datum().data.name === 'leak_alpha');
    const w = +g.querySelector('rect').getAttribute('width');
    return w >= root - 1 ? w : false;
  }, widths.root, { timeout: 15000 }).then(h => h.jsonValue()).catch(() => 0);
  check(zoomed >= widths.root - 1, `after a click leak_alpha spans the graph (${zoomed} of ${widths.root})`);
  check(widths.main > 0, 'main is drawn');
  return total;
}

// The allocation-size table #id: its bins as {bin: [allocations, bytes]}
// read from what it shows (the allocations column, the bytes' attribute
// beside their text), checked against want, the hand-counted sizes.
async function sizeTable(page, id, want) {
  const rows = await page.$$eval(`#${id} tr[data-bin]`, trs => trs.map(tr => ({
    bin: +tr.dataset.bin, range: tr.cells[0].textContent, allocs: +tr.cells[1].textContent.replace(/,/g, ''),
    bytes: +tr.cells[3].dataset.bytes, text: tr.cells[3].textContent })));
  const got = Object.fromEntries(rows.map(r => [r.bin, [r.allocs, r.bytes]]));
  check(JSON.stringify(got) === JSON.stringify(want), `${id}: bins ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  const big = rows.find(r => r.bin === 11);
  if (big) check(big.range === '1 KiB – <2 KiB' && big.text === '800.0 KiB', `${id}: bin 11 reads ${big.range}, ${big.text}`);
  return rows;
}

// The summary at the top of a run page: the gate's badge, the top leak
// site (leak_beta, the run's largest), which a click opens to its stack.
async function summary(page) {
  check(await page.locator('#run-summary .badge[data-verdict]').count() === 1, 'the summary has a gate badge');
  const top = page.locator('#top-sites tr.leak').first();
  check((await top.innerText()).includes('leak_beta'), 'top leak site: ' + await top.innerText());
  await top.click();
  const stack = page.locator('#top-sites tr.leak-stack:not([hidden]) .stack').first();
  await stack.waitFor({ timeout: 10000 });
  check((await stack.innerText()).includes(`${expect.source_name}:${expect.beta_line}`), 'top site stack: ' + await stack.innerText());
  check(await page.locator('#most-allocations tr.leak').count() > 0, 'most allocations listed');
  // At ui_leaker's peak its 800 blocks of 1 KiB, allocated in main, are
  // all there is: one consumer, main, holding 800 KiB.
  const held = await page.locator('#peak-stacks tr.leak').allInnerTexts();
  check(held.length === 1 && /^main\b/.test(held[0]) && held[0].includes('800.0 KiB'), 'peak consumers: ' + JSON.stringify(held));
  const heading = await page.locator('#peak-stacks').locator('xpath=..').locator('h3').innerText();
  check(heading.includes('held then by'), 'peak consumers are those at the peak: ' + heading);
  await page.locator('#run-summary').screenshot({ path: path.join(shots, 'summary.png') });
}

// The names of the flame graph's frames at depth d, left to right, with
// their values and whether a search highlighted them.
async function flameRow(page, d) {
  return page.evaluate(depth => [...document.querySelectorAll('#flame svg g.frame')].map(g => d3.select(g).datum())
    .filter(n => n.depth === depth).sort((a, b) => a.x0 - b.x0)
    .map(n => ({ name: n.data.name, value: n.value, highlight: !!n.highlight })), d);
}

// Frames below main hidden (and shown on demand), search, left-heavy and
// bottom-up views, the functions table with callers and callees; on the
// leak graph of the process the charts show.
async function callTrees(page) {
  let top = await flameRow(page, 1);
  check(top.length === 1 && top[0].name === 'main', 'below main hidden: the root calls main only: ' + JSON.stringify(top));
  await page.check('#flame-below-main');
  top = await flameRow(page, 1);
  check(top.some(n => n.name === '_start'), 'below main shown: ' + JSON.stringify(top));
  await page.uncheck('#flame-below-main');
  await page.fill('#flame-search', 'leak_beta');
  const hits = (await flameRow(page, 2)).filter(n => n.highlight);
  check(hits.length === 1 && hits[0].name === 'leak_beta', 'search highlights leak_beta: ' + JSON.stringify(hits));
  const said = await page.locator('#flame-details').innerText();
  check(said.includes('"leak_beta": 1 frames, 700 B leaked'), 'search result: ' + said);
  await page.fill('#flame-search', '');
  await page.selectOption('#flame-view', 'left');
  const left = await flameRow(page, 2);
  check(left.length > 1 && left.every((n, i) => !i || left[i - 1].value >= n.value), 'left-heavy: ' + JSON.stringify(left));
  await page.selectOption('#flame-view', 'bottom');
  const bottom = await flameRow(page, 1);
  check(bottom[0].name === 'leak_beta' && bottom[0].value === 700 &&
    bottom.every((n, i) => !i || bottom[i - 1].value >= n.value), 'bottom-up: allocation sites first: ' + JSON.stringify(bottom));
  check((await flameRow(page, 2)).every(n => n.name === 'main'), 'bottom-up: their caller is main');
  await page.locator('#flame').screenshot({ path: path.join(shots, 'flame-bottom-up.png') });
  await page.selectOption('#flame-view', 'top');
  const fns = await page.$$eval('#functions tr[data-fn]', rows => rows.map(r => r.dataset.fn));
  check(fns[0] === 'main' && fns.includes('leak_beta'), 'functions by total: ' + fns);
  await page.click('#functions tr[data-fn="leak_beta"]');
  check(await page.locator('#callers tr[data-fn="main"]').count() === 1, 'leak_beta is called from main');
  check(await page.locator('#callees').count() === 0, 'leak_beta calls nothing that allocates');
  await page.locator('#functions-box').screenshot({ path: path.join(shots, 'caller-callee.png') });
}

async function runPage(page) {
  await go(page, '#/run/2');
  await summary(page);
  check(await page.locator('#process-tree li').count() === 2, 'process tree: parent and fork child');
  await expandLeak(page, 'leak_beta', expect.beta_line);
  const points = await page.evaluate(() => window.hlCharts.timeline.data[0].length);
  const want = await chartedPoints(page);
  check(points === want, `timeline has ${points} points, the process ${want}`);
  check(+(await page.getAttribute('#timeline', 'data-points')) === points, 'timeline data-points');
  const tl = await chartLabels(page, 'timeline');
  check(tl.y.every(v => BINARY_TICK.test(v)), 'heap y ticks in binary steps: ' + tl.y);
  check(tl.x.every(v => / (s|ms|µs)$/.test(v)), 'heap x axis in time since start: ' + tl.x);
  check(new Set(tl.x).size === tl.x.length, 'heap x ticks all differ: ' + tl.x);
  check(await page.locator('#timeline canvas').count() === 1, 'timeline canvas');
  await sizeTable(page, 'run-sizes', expect.sizes_run);
  const charted = (await page.locator('#process-views h2').first().innerText()).match(/pid (\d+)/)[1];
  await page.waitForSelector('#process-sizes tr[data-bin]', { timeout: 10000 });
  await sizeTable(page, 'process-sizes', expect.sizes_by_pid[charted]);
  await page.locator('#run-sizes').screenshot({ path: path.join(shots, 'sizes.png') });
  const leaked = await flameGraph(page);
  await shot(page, 'run');
  await callTrees(page);
  await page.selectOption('#flame-kind', 'all');
  await page.waitForFunction(v => d3.select('#flame svg g.frame').datum().value !== v, leaked, { timeout: 10000 });
  await page.locator('#flame').screenshot({ path: path.join(shots, 'flame-all.png') });
  await page.fill('#leak-filter', 'leak_alpha');
  await page.click('#leaks-box button[type=submit]');
  await page.waitForFunction(() => [...document.querySelectorAll('#leaks tr.leak')].every(r => r.textContent.includes('leak_alpha')) &&
    document.querySelectorAll('#leaks tr.leak').length > 0, null, { timeout: 10000 });
}

async function otherPages(page) {
  await go(page, '#/diff?a=1&b=2');
  await shot(page, 'diff');
  const added = await page.locator('#diff-new tr.new').allInnerTexts();
  check(added.length === 1 && added[0].includes('leak_beta'), 'diff shows leak_beta as new: ' + added);
  check(await page.locator('#diff-fixed tr.fixed').count() === 0, 'diff: nothing fixed');
  await go(page, '#/search?q=leak_alpha');
  check((await page.locator('#search-results').innerText()).includes('leak_alpha'), 'search finds leak_alpha');
  await shot(page, 'search');
  await go(page, '#/history?program=ui_leaker');
  await shot(page, 'history');
  check(await page.locator('#history tr').count() === expect.program_runs + 1, 'history lists the runs');
  const beta = await page.locator('#history-sites tr', { hasText: 'leak_beta' }).innerText();
  check(beta.includes('new') && beta.includes('run 2'), 'history: leak_beta is new in run 2: ' + beta);
  check(await page.locator('#history-chart canvas').count() === 1, 'history chart');
  await go(page, '#/run/3');
  check((await page.locator('#process-tree').innerText()).includes('ui_leaker'), 'daemon run: its processes');
  check(await page.locator('#process-tree li').count() === 2, 'daemon run: two processes');
  await expandLeak(page, 'leak_alpha', expect.alpha_line);
  await shot(page, 'daemon-run');
}

// A daemon run still being written: the page shows the processes stored so
// far, then, without a click, those of a program that ends while it is open.
async function liveRun(browser) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  watch(page);
  const asked = [];
  page.on('request', r => asked.push(new URL(r.url()).pathname));
  // The page subscribes to the run's events rather than asking again.
  const subscribed = page.waitForRequest(r => r.url().endsWith('/api/runs/1/events'), { timeout: 20000 });
  await page.goto(expect.live.url + '#/run/1');
  await ready(page);
  await subscribed;
  check(await page.locator('#process-tree li').count() === 2, 'live run: the first client\'s two processes');
  check((await page.locator('main').innerText()).includes('still running'), 'live run: said to be running');
  execFileSync('sh', ['-c', expect.live.env + 'exec "$@"', 'sh', expect.live.prog, 'a'], { stdio: 'ignore' });
  await page.waitForFunction(() => document.querySelectorAll('#process-tree li').length === 4, null, { timeout: 60000 });
  // Each drawing of the page asks for the run once and opens one stream;
  // a redraw happens only on an event (a poll would ask for more).
  await ready(page);
  const runAsked = asked.filter(p => p === '/api/runs/1').length;
  const streams = () => asked.filter(p => p === '/api/runs/1/events').length;
  await until(() => streams() >= runAsked, 'live run: a stream per drawing');
  check(runAsked >= 2 && streams() === runAsked, `live run: the run asked for ${runAsked} times, its events ${streams()} times`);
  await shot(page, 'live-run');
  await page.close();
}

// Heap errors of a real run of ui_misuser: each error with its stacks
// (where, allocated at, freed at for a double free), each naming the right
// function at the source line of its marker.
async function heapErrors(browser) {
  const m = expect.misuse;
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  watch(page);
  await page.goto(m.url + '#/run/1');
  await ready(page);
  const shown = await page.locator('#errors-box .heap-error').evaluateAll(els => els.map(e => ({
    kind: e.dataset.kind, heading: e.querySelector('b').textContent,
    stacks: Object.fromEntries([...e.querySelectorAll('[data-role]')].map(s => [s.dataset.role,
      [...s.querySelectorAll('.frame')].map(f => ({ fn: f.querySelector('.fn').textContent,
        loc: f.querySelector('.loc').textContent }))])),
    text: e.textContent,
  })));
  check(shown.map(e => e.kind).join() === 'double_free,interior_free,mismatch', 'heap errors shown: ' + shown.map(e => e.kind));
  const frameAt = (frames, [fn, line], what) => {
    const f = (frames || []).find(x => x.fn === fn || x.fn.startsWith(fn + '('));
    check(f, `${what}: the stack names ${fn}: ${JSON.stringify(frames)}`);
    check(f.loc.endsWith(`${m.source_name}:${line}`), `${what}: ${fn} at ${f.loc}, want ${m.source_name}:${line}`);
    check(frames.indexOf(f) === 0, `${what}: ${fn} is the innermost frame: ${JSON.stringify(frames)}`);
  };
  for (const e of shown) {
    const [where, alloc, freed] = m.errors[e.kind];
    frameAt(e.stacks.where, where, e.kind + ' where');
    frameAt(e.stacks.alloc, alloc, e.kind + ' allocated at');
    if (!freed) check(!('free' in e.stacks), e.kind + ': no free stack');
    else if (m.free_recorded) frameAt(e.stacks.free, freed, e.kind + ' freed at');
    else check(e.text.includes('freed at: not recorded'), e.kind + ': the page says the free stack was not recorded');
  }
  check(shown[0].heading.startsWith('Invalid free()') && shown[0].text.includes("0 bytes inside a block of size 96 free'd"),
    'double free heading: ' + shown[0].text);
  check(shown[1].text.includes("24 bytes inside a block of size 160 alloc'd"), 'free inside a block: ' + shown[1].text);
  check(shown[2].heading.startsWith('Mismatched free() / delete / delete []'), 'mismatch heading: ' + shown[2].heading);
  await page.locator('#errors-box').screenshot({ path: path.join(shots, 'heap-errors.png') });
  await page.close();
}

// On-demand leak checks of a real run of scan_checkpoints: check 1 lists
// leak_a's two blocks as a new loss record, check 2 leak_b's block as new
// and says that leak_a's record, unchanged, is not shown; each with its
// totals by kind and what changed since the check before.
async function leakChecks(browser) {
  const c = expect.checks;
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  watch(page);
  await page.goto(c.url + '#/run/1');
  await ready(page);
  const shown = await page.locator('#checks-box .leak-check').evaluateAll(els => els.map(e => ({
    seq: e.dataset.seq, text: e.textContent,
    definitely: e.querySelector('tr[data-kind="definitely"]').textContent,
    records: [...e.querySelectorAll('.check-record')].map(r => ({ kind: r.dataset.kind,
      text: r.firstChild.textContent, fns: [...r.querySelectorAll('.fn')].map(f => f.textContent) })),
  })));
  check(shown.map(x => x.seq).join() === '1,2', 'leak checks shown: ' + shown.map(x => x.seq));
  const [one, two] = shown;
  const lost = x => x.records.filter(r => r.kind === 'definitely');
  check(lost(one).length === 1 && lost(one)[0].fns[0] === 'leak_a' &&
    lost(one)[0].text.startsWith('96 (+96) bytes in 2 (+2) blocks are definitely lost in new loss record'),
    'check 1 records: ' + JSON.stringify(one.records));
  check(one.definitely.includes('96 B (+96)') && one.definitely.includes('2 (+2)'), 'check 1 totals: ' + one.definitely);
  check(lost(two).length === 1 && lost(two)[0].fns[0] === 'leak_b' &&
    lost(two)[0].text.startsWith('200 (+200) bytes in 1 (+1) blocks are definitely lost in new loss record'),
    'check 2 records: ' + JSON.stringify(two.records));
  check(two.definitely.includes('296 B (+200)') && two.definitely.includes('3 (+1)'), 'check 2 totals: ' + two.definitely);
  check(two.text.includes('1 loss record that did not grow since the check before not shown'),
    'check 2 names the record left out: ' + two.text);
  await page.locator('#checks-box').screenshot({ path: path.join(shots, 'leak-checks.png') });
  await page.close();
}

// The HTML report, opened from a file with the network off: every request
// that is not for the file itself fails the test.
async function htmlReport(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, offline: true });
  const requests = [];
  await context.route('**/*', r => {
    if (!r.request().url().startsWith('file:')) requests.push(r.request().url());
    return r.request().url().startsWith('file:') ? r.continue() : r.abort();
  });
  const page = await context.newPage();
  watch(page);
  await page.goto('file://' + expect.report);
  await ready(page);
  check((await page.locator('h1').innerText()).includes('ui_leaker'), 'report: run heading');
  await expandLeak(page, 'leak_beta', expect.beta_line);
  const points = await page.evaluate(() => window.hlCharts.timeline.data[0].length);
  check(points === await chartedPoints(page), `report timeline has ${points} points`);
  await sizeTable(page, 'run-sizes', expect.sizes_run);
  await flameGraph(page);
  await shot(page, 'report');
  check(requests.length === 0, 'the report asked the network for: ' + requests.join(' '));
  await context.close();
}

// An HTML report whose run's argv holds "<!--<script>": the page parses as
// written and shows every leak record and the argv as text.
async function hostileReport(browser) {
  const x = expect.hostile;
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  watch(page);
  await page.goto('file://' + x.report);
  await ready(page);
  await page.selectOption('#leak-group', 'record');
  await page.waitForFunction(n => document.querySelector('#leak-group').value === 'record' &&
    document.querySelectorAll('#leaks tr.leak').length === n, x.leaks, { timeout: 10000 }).catch(() => {});
  const rows = await page.locator('#leaks tr.leak').count();
  check(rows === x.leaks, `hostile report: ${rows} leak rows, the run has ${x.leaks}`);
  check((await page.locator('main').innerText()).includes(x.argv), 'hostile report shows its argv as text');
  check(await page.locator('main b', { hasText: /^x$/ }).count() === 0, 'hostile report: argv made markup');
  await shot(page, 'report-hostile-argv');
  await page.close();
}

// A byte tick of a binary step: whole (or halves, quarters, eighths of) B,
// KiB, MiB: 256 KiB, 768 KiB, 1.5 MiB; never 488.3 KiB.
const BINARY_TICK = /^(0|\d+(\.(5|25|75|125|375|625|875))? (B|KiB|MiB|GiB))$/;

// A chart's tick labels (uPlot draws them on a canvas and keeps them in
// axes[i]._values), its point count and its legend's values.
async function chartLabels(page, name) {
  return page.evaluate(n => {
    const u = window.hlCharts[n];
    return { n: u.data[0].length, x: u.axes[0]._values || [], y: u.axes[1]._values || [],
      legend: [...u.root.querySelectorAll('.u-legend .u-value')].map(e => e.textContent) };
  }, name);
}

// Runs that once showed wrong data (check_ui_browser.py's data_expect).
async function dataBugs(browser) {
  const d = expect.data;
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  watch(page);
  await page.goto(d.url + '#/run/2');
  await ready(page);
  const overrun = page.locator('#errors-box .heap-error[data-kind="overflow"]');
  check(await overrun.count() === 1, 'the overrun is listed');
  const heading = await overrun.locator('b').innerText();
  check(heading.startsWith('Heap block overrun'), 'an overflow is headed as an overrun: ' + heading);
  check((await overrun.innerText()).includes('bytes after a block of size 64'), 'overrun: where: ' + await overrun.innerText());
  await page.locator('#errors-box').screenshot({ path: path.join(shots, 'overrun.png') });
  check(await page.getAttribute('#run-summary .badge', 'data-verdict') === 'failed', 'the overrun run fails the gate');
  check(await page.locator('#leaked-by-class .chip[data-kind="overflow"]').count() === 1, 'the summary counts the overrun');
  // Its one heap sample: a point, x in time since start, y in bytes.
  const one = await chartLabels(page, 'timeline');
  check(one.n === 1, 'the overrun run has one heap sample: ' + one.n);
  check(one.x.length > 1 && one.x.every(v => /^\d+(\.\d+)? (s|ms|µs)$/.test(v)) && new Set(one.x).size === one.x.length,
    'one-sample x axis in time since start, ticks that differ: ' + one.x);
  check(one.y.length > 0 && one.y.every(v => /^(0|\d+(\.\d+)? (B|KiB|MiB))$/.test(v)), 'one-sample y axis in bytes: ' + one.y);
  check(one.legend[1] && one.legend[1] !== '--', 'the legend shows the value without a hover: ' + one.legend);
  await page.locator('#timeline').screenshot({ path: path.join(shots, 'one-sample.png') });

  await go(page, '#/run/3');
  const diff = await page.getAttribute('#diff-previous', 'href');
  check(diff === '#/diff?a=1&b=3', 'run 3 diffs with run 1, the run before of ui_leaker: ' + diff);
  // By default the leak table shows what leaks: suppressed leak_alpha is
  // one click away, and then shown as suppressed.
  check(await page.locator('#leaks tr.leak', { hasText: 'leak_alpha' }).count() === 0,
    'the default leak view hides the suppressed leak_alpha');
  check(await page.locator('#leaks tr.leak').count() > 0, 'the default leak view shows what leaks');
  await page.click('#leak-show-all');
  await page.waitForFunction(() => document.getElementById('leak-class').value === '' &&
    [...document.querySelectorAll('#leaks tr.leak')].some(r => r.textContent.includes('leak_alpha')), null, { timeout: 10000 });
  const alpha = await page.locator('#leaks tr.leak', { hasText: 'leak_alpha' }).evaluateAll(rows =>
    rows.map(r => ({ cls: r.cells[1].dataset.class, text: r.cells[1].textContent, css: r.cells[1].className })));
  check(alpha.length > 0 && alpha.every(a => a.cls === 'suppressed' && a.text.startsWith('suppressed') &&
    !/definitely|unknown/.test(a.css)), 'suppressed leak_alpha rows: ' + JSON.stringify(alpha));
  const picked = await page.$eval('#process-pick', s => s.selectedOptions[0].textContent);
  check(picked.startsWith(`pid ${d.child_pid} `), `the charts open on the child that leaked most: ${picked}`);
  check((await page.locator('#process-views h2').first().innerText()).includes(`pid ${d.child_pid}`), 'the charts are the child\'s');
  const tree = await page.locator('#process-tree').innerText();
  check(!/ 0 B leaked in [1-9]/.test(tree), 'records counted as bytes are: ' + tree);
  await shot(page, 'run-suppressed');

  const tops = await page.locator('#top-sites tr.leak').allInnerTexts();
  check(tops.every(t => !t.includes('leak_alpha')), 'a suppressed site is no top leak site: ' + tops);
  check(await page.locator('#leaked-by-class .chip[data-class="suppressed"]').count() === 1, 'suppressed shown as such');
  await go(page, '#/');
  const badges = await page.$$eval('#runs tr[data-run]', rows => Object.fromEntries(rows.map(r =>
    [r.dataset.run, r.querySelector('.badge').dataset.verdict])));
  check(JSON.stringify(badges) === JSON.stringify(d.gate), `run list badges ${JSON.stringify(badges)}, the gate ${JSON.stringify(d.gate)}`);
  check(await page.locator('#runs svg.spark').count() === 6, 'a leak sparkline per run');
  await shot(page, 'runs-badges');
  const suppressed = await page.evaluate(() => {
    const table = document.getElementById('runs');
    const col = [...table.rows[0].cells].findIndex(c => c.textContent === 'suppressed');
    const row = table.querySelector('tr[data-run="3"]');
    return { col, text: col < 0 ? null : row.cells[col].textContent };
  });
  check(suppressed.text === `${d.suppressed_bytes} B`, `the run list's suppressed bytes of run 3: ${JSON.stringify(suppressed)}, want ${d.suppressed_bytes} B`);

  // The history's x axis is the run, its y ticks binary units.
  await go(page, '#/history?program=ui_leaker');
  const hist = await chartLabels(page, 'history');
  check(hist.x.filter(v => v).every(v => /^run [13]( [0-9a-f]{8})?$/.test(v)) && hist.x.some(v => v.startsWith("run 1")), 'history x axis: runs: ' + hist.x);
  check(hist.y.every(v => BINARY_TICK.test(v)), 'history y ticks in binary steps: ' + hist.y);
  check(hist.legend.slice(1).every(v => v !== '--'), 'history legend without a hover: ' + hist.legend);
  await page.locator('#history-chart').screenshot({ path: path.join(shots, 'history-chart.png') });
  await go(page, '#/run/5');
  const where = await page.locator('#leaks tr.leak td:nth-child(5)').allInnerTexts();
  check(where.length > 0 && where.every(w => w.includes('ui_nodebug+0x') && !w.includes('libc_start')),
    'without debug information, where is the program\'s own frame: ' + JSON.stringify(where));
  check(where.some(w => w.includes('leak_beta')), 'the symbol table names leak_beta: ' + JSON.stringify(where));
  await shot(page, 'run-nodebug');

  // A suite: its processes grouped by test name, the leakiest first, each
  // test's lost bytes and processes as the database has them; a click
  // shows the test's processes.
  await go(page, '#/run/6');
  const tests = await page.$$eval('#tests tr.test', rows => rows.map(r => ({ name: r.dataset.test,
    procs: +r.cells[1].textContent, lost: +r.dataset.lost })));
  const named = tests.filter(t => t.name in d.tests);
  check(named.length === 2 && named[0].name === 't_beta', 'tests, the leakiest first: ' + JSON.stringify(tests));
  for (const t of named)
    check(t.procs === d.tests[t.name][0] && t.lost === d.tests[t.name][1],
      `test ${t.name}: ${JSON.stringify(t)}, the database ${JSON.stringify(d.tests[t.name])}`);
  await page.locator('#tests tr.test[data-test="t_beta"]').click();
  check((await page.locator('#tests tr.leak-stack:not([hidden])').innerText()).includes('test t_beta: ui_leaker'),
    'the test\'s processes shown');
  await shot(page, 'suite-tests');
  await page.close();
}

// The README's two pictures (doc/img/ui-run.png, ui-history.png come from
// these): the top of a run page and of a history, small.
async function readmeShots(browser) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 860 }, deviceScaleFactor: 0.6 });
  const page = await context.newPage();
  watch(page);
  await page.goto(expect.url + '#/run/2');
  await ready(page);
  await page.screenshot({ path: path.join(shots, 'readme-run.png') });
  await go(page, '#/history?program=ui_leaker');
  await page.screenshot({ path: path.join(shots, 'readme-history.png') });
  await context.close();
}

// The dark scheme: the system's preference is followed, the header's switch
// picks the other one and the choice outlives a reload.
async function darkScheme(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'dark' });
  const page = await context.newPage();
  watch(page);
  const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await page.goto(expect.url + '#/run/2');
  await ready(page);
  check(await background() === 'rgb(22, 25, 28)', 'a dark system gets the dark scheme: ' + await background());
  await shot(page, 'dark-run');
  await page.evaluate(() => document.body.removeAttribute('data-ready'));
  await page.click('#theme');
  await ready(page);
  check(await background() === 'rgb(250, 250, 250)', 'the switch picks the light scheme: ' + await background());
  await page.reload();
  await ready(page);
  check(await background() === 'rgb(250, 250, 250)', 'the choice outlives a reload: ' + await background());
  await context.close();
}

function watch(page) {
  watchInto(page, problems);
}

const browser = await launchBrowser();
let failed = null;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  watch(page);
  await runsPage(page);
  await runPage(page);
  await otherPages(page);
  if (expect.report) await htmlReport(browser);
  await hostileReport(browser);
  await dataBugs(browser);
  await readmeShots(browser);
  await darkScheme(browser);
  await heapErrors(browser);
  await leakChecks(browser);
  await liveRun(browser);
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
console.log('browser: every page checked; screenshots in ' + shots);
