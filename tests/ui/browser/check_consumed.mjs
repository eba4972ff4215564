// tests/ui/browser/check_consumed.mjs: the run page of a run of ui_phases in
// headless chromium (playwright-core): the "most temporary allocations"
// card and the "heap consumed by the top functions" chart show the names
// and numbers the query layer answered (the API's, given in EXPECT), and
// the chart's axes read in seconds and binary units. Run by
// tests/ui/check_ui_consumed.py, which made the database and the server.
//
// Usage: node check_consumed.mjs EXPECT.json SCREENSHOT_DIR
// EXPECT: {url, temporaries: [{function, value, count}], consumed: {sites:
// [{function, bytes}], other, total, points}}
import { launchBrowser, newWatchedPage } from './harness.mjs';
import fs from 'node:fs';
import path from 'node:path';

const expect = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const shots = process.argv[3];
const problems = [];
const BINARY_TICK = /^(0|\d+(\.(5|25|75|125|375|625|875))? (B|KiB|MiB|GiB))$/;

function check(ok, what) {
  if (!ok) problems.push(what);
}

const browser = await launchBrowser();
try {
  const page = await newWatchedPage(browser, problems);
  await page.goto(expect.url + '#/run/1');
  await page.waitForSelector('body[data-ready]', { timeout: 30000 });

  // Most temporary allocations: each row's function and count as the
  // summary's query answered, in its order.
  const rows = await page.$$eval('#most-temporaries tr.leak', trs => trs.map(tr => ({
    fn: tr.querySelector('.fn').textContent, cells: [...tr.querySelectorAll('td.num')].map(td => td.textContent) })));
  const want = expect.temporaries.map(t => ({ fn: t.function, cells: [t.value.toLocaleString('en-US'), t.count.toLocaleString('en-US')] }));
  check(JSON.stringify(rows) === JSON.stringify(want),
    `most temporaries: ${JSON.stringify(rows)}, want ${JSON.stringify(want)}`);
  check(rows.length && rows[0].fn === 'churn', 'churn makes the most temporaries: ' + JSON.stringify(rows));
  await page.locator('#most-temporaries').locator('xpath=..').screenshot({ path: path.join(shots, 'temporaries.png') });

  // The consumed chart: a band per site, the largest peak first, other on
  // top (uPlot's series are drawn the other way round); each band's bytes
  // at every sample; the legend at rest shows them at the heap's peak.
  await page.waitForFunction(() => window.hlCharts.consumed, null, { timeout: 30000 });
  const c = expect.consumed;
  const got = await page.evaluate(() => {
    const u = window.hlCharts.consumed;
    return { labels: u.series.slice(1).map(s => s.label), data: u.data.slice(1), n: u.data[0].length,
      x: u.axes[0]._values || [], y: u.axes[1]._values || [],
      legend: [...u.root.querySelectorAll('.u-legend .u-series')].slice(1).map(e => [
        e.querySelector('.u-label').textContent, e.querySelector('.u-value').textContent]),
      sites: document.querySelector('#consumed').dataset.sites };
  });
  const names = [...c.sites.map(s => s.function), 'other'];
  check(JSON.stringify(got.labels) === JSON.stringify([...names].reverse()), `bands ${got.labels}, want ${names} (top down)`);
  check(got.n === c.points, `the chart has ${got.n} samples, the timeline ${c.points}`);
  // The series are running sums from the top: band k is data[k] - data[k + 1].
  const bands = [...names].reverse().map((name, k) => got.data[k].map((v, i) => v - (got.data[k + 1] ? got.data[k + 1][i] : 0)));
  const wantBands = [...c.sites.map(s => s.bytes), c.other].reverse();
  check(JSON.stringify(bands) === JSON.stringify(wantBands), 'each band holds the site\'s bytes at every sample');
  check(JSON.stringify(got.data[0]) === JSON.stringify(c.total), 'the top edge is the heap in use');
  const peak = c.total.indexOf(Math.max(...c.total));
  const legendWant = await page.evaluate(([values, names]) => names.map((n, k) => [n, bytes(values[k])]),
    [[...c.sites.map(s => s.bytes[peak]), c.other[peak]].reverse(), [...names].reverse()]);
  check(JSON.stringify(got.legend) === JSON.stringify(legendWant), `legend ${JSON.stringify(got.legend)}, want ${JSON.stringify(legendWant)}`);
  check(got.legend.some(([n, v]) => n === 'hold_first' && v === '512.0 KiB'), 'hold_first held 512 KiB at the peak: ' + JSON.stringify(got.legend));
  check(got.y.length > 1 && got.y.every(v => BINARY_TICK.test(v)), 'y ticks in binary steps: ' + got.y);
  check(got.x.length > 1 && got.x.every(v => / (s|ms|µs)$/.test(v)), 'x ticks in time since start: ' + got.x);
  check(new Set(got.x).size === got.x.length, 'x ticks all differ: ' + got.x);
  await page.locator('#consumed').screenshot({ path: path.join(shots, 'consumed.png') });
} finally {
  await browser.close();
}
if (problems.length) {
  console.log(problems.map(p => 'FAIL: ' + p).join('\n'));
  process.exit(1);
}
console.log('ok: most temporaries and the consumed chart as the query layer answered');
