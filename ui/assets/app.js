/*
 * ui/assets/app.js: the pages of the web UI, rendered from the JSON API
 * (ui/api.c). In an HTML report (`heapledger report --format html`) the
 * same pages read the answers inlined in the file instead (#hl-data), so
 * the report needs no server and no network.
 *
 * Routes (the part after '#'): /  runs;  /run/ID  one run;  /diff?a&b;
 * /search?q;  /history?program.  Charts: uPlot; flame graphs: d3-flame-graph.
 */
'use strict';

const STATIC = (() => {
  const el = document.getElementById('hl-data');
  return el ? JSON.parse(el.textContent) : null;
})();
const PAGE = 100;
/* The leak table's default filter: what leaks (the lost classes, not
 * suppressed), with still reachable and suppressed records one click away. */
const LOST = 'lost';
window.hlCharts = {};

/* ---- data ---- */

function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {}))
    if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? '?' + s : '';
}

/* A static report holds whole answers keyed by path; paging and filtering
 * of leak rows happen here instead of on the server. */
function staticApi(path, params) {
  const v = STATIC.answers[path + (params.group === 'site' ? '?group=site' : '')];
  if (v === undefined) return Promise.reject(new Error('not in this report: ' + path));
  if (!v.rows || !/\/leaks$/.test(path)) return Promise.resolve(v);
  const f = (params.filter || '').toLowerCase();
  const lost = new Set(VOCAB.leak_classes.filter(c => c.lost).map(c => c.word));
  const shown = r => r.suppressed ? 'suppressed' : r.kind;
  const wanted = r => !params.class || shown(r) === params.class ||
    (params.class === LOST && !r.suppressed && lost.has(r.kind));
  let rows = v.rows.filter(r => wanted(r) &&
    (!f || (r.search || '').toLowerCase().includes(f)));
  const off = +params.offset || 0;
  return Promise.resolve({ total: rows.length, rows: rows.slice(off, off + (+params.limit || PAGE)), left_out: v.left_out });
}

async function api(path, params) {
  if (STATIC) return staticApi(path, params || {});
  const r = await fetch('api/' + path + qs(params));
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

/* ---- formatting ---- */

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'onclick' || k === 'oninput' || k === 'onchange' || k === 'onsubmit') e[k] = v;
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v);
  }
  for (const k of kids.flat())
    if (k !== undefined && k !== null) e.append(k instanceof Node ? k : String(k));
  return e;
}

function bytes(n) {
  if (n === null || n === undefined) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0, v = n;
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : String(v)) + ' ' + u[i];
}

/* A count as every table writes one: 12,980,515. */
function count(n) {
  return (n ?? 0).toLocaleString('en-US');
}

function when(ns) {
  return ns ? new Date(ns / 1e6).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '';
}

// A word that is not UTF-8 is stored as the array of its bytes (doc/manual.md).
/* The arguments after argv[0], each word as argvText() reads it. */
function argsText(json) {
  const words = argvText(json).split(' ');
  return words.length > 1 ? ' ' + words.slice(1).join(' ') : '';
}

function argvText(json) {
  const word = (w) => Array.isArray(w) ? new TextDecoder().decode(new Uint8Array(w)) : w;
  try { return JSON.parse(json).map(word).join(' '); } catch (e) { return json || ''; }
}

function exitText(p) {
  if (p.fatal_signal) return fatalText(p);
  /* Its stream ended first: killed (SIGKILL, or a signal the hook does not
   * handle, as a runner's SIGTERM at a timeout), or the connection lost. */
  if (p.no_exit_record && p.exit_how === 'unknown') return 'no exit record (killed, or its connection lost)';
  if (p.exit_how === 'signal') return 'signal ' + p.exit_signal;
  if (p.exit_how === 'exit' || p.exit_how === '_exit') return p.exit_how + ' ' + p.exit_status;
  return p.exit_how;
}

/* ", test NAME" after a process's pid where a runner named its test. */
function testOf(p) {
  return p && p.test_name ? `, test ${p.test_name}` : '';
}

/* As the text report says it: "Process terminating with default action of
 * signal 11 (SIGSEGV)", then the fault's words and address. */
function fatalText(p) {
  const address = '0x' + BigInt.asUintN(64, BigInt(p.fatal_address || 0)).toString(16);
  return `terminated by signal ${p.fatal_signal} (${p.fatal_name})` +
    (p.fatal_fault ? `: ${p.fatal_fault} at address ${address}` : '');
}

/* Where the fatal signal arrived, opened on a click. */
function fatalWhere(p) {
  if (!p.fatal_signal) return null;
  const box = h('div', { class: 'fatal-stack', hidden: true });
  const link = h('a', { href: '#', class: 'fatal-where' }, ' (where)');
  link.onclick = async e => {
    e.preventDefault();
    if (!box.hidden) { box.hidden = true; return; }
    box.replaceChildren(await stackBlock(p.fatal_stack_id, 'Process terminating with default action of signal ' +
      `${p.fatal_signal} (${p.fatal_name}):`));
    box.hidden = false;
  };
  return [link, box];
}

function num(v) { return h('td', { class: 'num' }, v); }

function frameLine(f) {
  const fn = f.function || ((f.module || '?').split('/').pop() + '+0x' + (f.offset || 0).toString(16));
  const loc = f.file ? f.file + ':' + f.line : (f.module || '');
  return h('div', { class: 'frame' }, h('span', { class: 'fn' }, fn),
    f.inlined ? h('span', { class: 'muted' }, ' (inlined)') : null,
    ' ', h('span', { class: 'loc' }, loc));
}

async function stackBlock(id, title) {
  return stackFrames(id ? await api('stacks/' + id) : null, title, id);
}

/* A stack as the API writes it: {frames, truncated} (GET /api/stacks/ID),
 * or a record's "stack" and "stack_truncated" (records carry their stacks
 * whole, as the JSON report writes them); null: none. */
function stackFrames(s, title, id) {
  const box = h('div', { class: 'stack', 'data-stack': id || '' });
  if (title) box.append(h('div', { class: 'muted' }, title));
  if (!s || !s.frames.length) { box.append(h('div', { class: 'muted' }, '(no stack)')); return box; }
  /* Frames below main (the C runtime's start code) are hidden until asked
   * for, as valgrind hides them. */
  const main = s.frames.map(f => f.function).lastIndexOf('main');
  const below = main >= 0 ? s.frames.slice(main + 1) : [];
  for (const f of main >= 0 ? s.frames.slice(0, main + 1) : s.frames) box.append(frameLine(f));
  if (below.length) {
    const more = h('button', { class: 'below-main link' }, `${below.length} frame${below.length > 1 ? 's' : ''} below main`);
    more.onclick = e => { e.stopPropagation(); more.replaceWith(...below.map(frameLine)); };
    box.append(more);
  }
  if (s.truncated) box.append(h('div', { class: 'muted stack-cut' }, cutText(s.frames)));
  return box;
}

/* Where the hook cut a stack (depth=, counted in return addresses: inlined
 * frames share one) and how to get it whole: its outer frames, its root
 * among them, are missing. */
function cutText(frames) {
  const n = frames.filter(f => !f.inlined).length, MAX_FRAMES = VOCAB.max_frames;
  return n >= MAX_FRAMES ? `… stack truncated at ${n} frames, the most heapledger captures: its outer frames are missing`
    : `… stack truncated at ${n} frames: its outer frames are missing; run with --depth ${MAX_FRAMES} ` +
      `(HEAPLEDGER_OPTIONS=depth=${MAX_FRAMES}) to keep up to ${MAX_FRAMES}`;
}

function pager(total, offset, go) {
  return h('span', { class: 'pager' },
    h('button', { onclick: () => go(Math.max(0, offset - PAGE)), disabled: offset === 0 }, '‹ prev'),
    ` ${total ? offset + 1 : 0}–${Math.min(offset + PAGE, total)} of ${total} `,
    h('button', { onclick: () => go(offset + PAGE), disabled: offset + PAGE >= total }, 'next ›'));
}

function show(...nodes) {
  const app = document.getElementById('app');
  app.replaceChildren(...nodes.flat().filter(n => n !== null && n !== undefined));
  return app;
}

/* ---- runs ---- */

/* What to do when there is nothing to show yet. */
function firstRunHelp(noDatabase) {
  return h('div', { id: 'first-run', class: 'help' },
    h('p', null, noDatabase ? 'There is no database yet: no run has been stored.'
      : 'The database holds no runs yet.'),
    h('p', null, 'Run a program under heapledger and its run appears here (reload the page):'),
    h('pre', null, 'heapledger run -- ./your-program args...'),
    h('p', null, 'For a whole test suite, start a daemon, then run the suite in a shell that has its environment:'),
    h('pre', null, 'heapledger daemon &\neval "$(heapledger env)"\nmake check'));
}

async function pageRuns(params) {
  const filter = params.get('filter') || '';
  const offset = +params.get('offset') || 0;
  const data = await api('runs', { filter, offset, limit: PAGE });
  const input = h('input', { id: 'runs-filter', placeholder: 'program, label, commit…', value: filter });
  const form = h('form', { class: 'bar', onsubmit: e => { e.preventDefault(); location.hash = '#/' + qs({ filter: input.value }); } },
    input, h('button', { type: 'submit' }, 'filter'),
    pager(data.total, offset, o => { location.hash = '#/' + qs({ filter, offset: o }); }));
  const trend = await leakTrends(data.rows);
  const rows = data.rows.map(r => {
    const labels = Object.entries(r.labels || {}).map(([k, v]) => k + '=' + v).join(' ');
    const leaked = c => bytes(r.leaked?.[c] || 0);
    return h('tr', { 'data-run': r.id },
      h('td', null, h('a', { href: '#/run/' + r.id }, r.id)),
      h('td', null, verdictBadge(r.verdict)),
      h('td', null, h('a', { href: '#/history' + qs({ program: r.program }) }, r.program || '?'),
        h('div', { class: 'muted' }, argvText(r.argv))),
      h('td', null, r.mode), h('td', null, labels), h('td', null, (r.git_commit || '').slice(0, 12)),
      h('td', { class: 'when' }, when(r.started_ns)), num(r.exit_code ?? ''),
      ...VOCAB.leak_classes.map(c => num(leaked(c.word))),
      num(r.errors), num(bytes(r.peak_bytes)), h('td', null, sparkline(trend.get(r.id))));
  });
  if (!data.total && !filter) {
    show(h('h1', null, 'Runs'), firstRunHelp(data.no_database));
    return;
  }
  show(h('h1', null, 'Runs'), form,
    h('table', { id: 'runs' }, h('tr', null, ...['run', 'gate', 'program', 'mode', 'labels', 'commit', 'started', 'exit status']
      .map(t => h('th', null, t)), ...[...VOCAB.leak_classes.map(c => c.label), 'errors', 'peak heap']
      .map(t => h('th', { class: 'num' }, t)), h('th', { title: `bytes lost by the last ${TREND} runs of this program up to this one, oldest first` }, 'lost, by run')), rows));
}

/* ---- the gate's verdict, trends ---- */

/* The gate's verdict (what `heapledger gate RUN` says), never the
 * program's exit status. */
function verdictBadge(v) {
  if (!v) return h('span', { class: 'badge' }, '?');
  const word = v.incomplete ? 'incomplete' : v.failed ? 'failed' : 'passed';
  return h('span', { class: 'badge badge-' + word, 'data-verdict': v.failed ? 'failed' : 'passed',
    title: v.incomplete || (v.failed ? 'the gate fails this run' : 'the gate passes this run') }, word);
}

/* Bytes lost (the lost classes, not suppressed) by a run's row. */
function lostBytes(r) {
  return VOCAB.leak_classes.filter(c => c.lost).reduce((n, c) => n + (r.leaked?.[c.word] || 0), 0);
}

const TREND = 20;

/* Per run of the page, the lost bytes of its program's last TREND runs up to
 * it, oldest first, from every stored run (GET /api/trend: one request per
 * program of the page), whatever the page and its filter show. */
async function leakTrends(rows) {
  const byProgram = new Map(), out = new Map();
  for (const r of rows) {
    if (!r.program) { out.set(r.id, [lostBytes(r)]); continue; }
    const p = byProgram.get(r.program) || { upto: 0, n: 0 };
    byProgram.set(r.program, { upto: Math.max(p.upto, r.id), n: p.n + 1 });
  }
  await Promise.all([...byProgram].map(async ([program, p]) => {
    const runs = await api('trend', { program, upto: p.upto, limit: Math.min(200, p.n + TREND - 1) });
    for (const r of rows.filter(x => x.program === program))
      out.set(r.id, runs.filter(x => x.id <= r.id).slice(-TREND).map(lostBytes));
  }));
  return out;
}

/* A tiny line of values (SVG, no axes); the last value is marked. */
function sparkline(values) {
  const ns = 'http://www.w3.org/2000/svg', W = 90, H = 18;
  if (!values || !values.length) return null;
  const max = Math.max(...values, 1), step = values.length > 1 ? (W - 4) / (values.length - 1) : 0;
  const pts = values.map((v, i) => [2 + i * step, H - 2 - (v / max) * (H - 4)]);
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', W); svg.setAttribute('height', H); svg.setAttribute('class', 'spark');
  svg.setAttribute('data-values', values.join(','));
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', pts.map(p => p.join(',')).join(' '));
  const dot = document.createElementNS(ns, 'circle');
  const [x, y] = pts[pts.length - 1];
  dot.setAttribute('cx', x); dot.setAttribute('cy', y); dot.setAttribute('r', 2);
  const title = document.createElementNS(ns, 'title');
  title.textContent = values.map(bytes).join(' → ');
  svg.append(title, line, dot);
  return svg;
}

/* ---- summary of a run ---- */

/* "1 block", "2 blocks". */
function plural(n, one, many) {
  return `${count(n)} ${n === 1 ? one : many}`;
}

function verdictText(v) {
  const kinds = v.kinds.map(w => VOCAB.leak_classes.find(c => c.word === w)?.label || w).join(', ');
  const parts = [];
  if (v.incomplete) parts.push(v.incomplete);
  parts.push(v.records ? `${bytes(v.bytes)} in ${plural(v.blocks, 'block', 'blocks')} (${plural(v.records, 'loss record', 'loss records')}) ${kinds}`
    : `no leaks of the kinds it counts (${kinds || 'none'})`);
  parts.push(plural(v.errors, 'heap error', 'heap errors'));
  if (v.suppressed_blocks) parts.push(`${bytes(v.suppressed_bytes)} in ${plural(v.suppressed_blocks, 'block', 'blocks')} suppressed (not counted)`);
  if (v.unscanned_blocks) parts.push(`${bytes(v.unscanned_bytes)} in ${plural(v.unscanned_blocks, 'block', 'blocks')} no leak scan classified (not counted)`);
  return parts.join('; ');
}

/* A ranked list of stacks; a click on a row shows its whole stack. */
function stackRanking(id, title, rows, cols) {
  const body = [];
  /* One row per site across a suite's processes: how many it is in. */
  const many = rows.some(r => r.processes > 1);
  for (const r of rows) {
    const tr = h('tr', { class: 'leak', 'data-stack': r.stack_id }, h('td', null, whereText(r)),
      ...cols.map(([, f]) => num(f(r))), many ? num(count(r.processes)) : null);
    const open = h('tr', { class: 'leak-stack', hidden: true }, h('td', { colspan: cols.length + 1 + many }));
    tr.onclick = async () => {
      if (!open.hidden) { open.hidden = true; return; }
      open.firstChild.replaceChildren(await stackBlock(r.stack_id));
      open.hidden = false;
    };
    body.push(tr, open);
  }
  return h('div', { class: 'card' }, h('h3', null, title),
    rows.length ? h('table', { id }, h('tr', null, h('th', null, 'where'), cols.map(([t]) => h('th', { class: 'num' }, t)),
      many ? h('th', { class: 'num' }, 'processes') : null), body)
      : h('p', { class: 'muted' }, 'none'));
}

function runSummary(run, sum) {
  const v = sum.verdict;
  const classes = VOCAB.leak_classes.filter(c => sum.leaked[c.word]).map(c => {
    const l = sum.leaked[c.word];
    return h('span', { class: 'chip cls-' + c.word, 'data-class': c.word },
      `${c.label}: ${bytes(l.bytes)} in ${plural(l.blocks, 'block', 'blocks')}`);
  });
  const errs = Object.entries(sum.errors).map(([k, n]) => h('span', { class: 'chip error', 'data-kind': k },
    `${n} × ${VOCAB.error_kinds.find(x => x.word === k)?.heading || k}`));
  const sites = sum.top_sites.map(t => Object.assign({ fingerprint: t.fingerprint, leak_class: t.leak_class },
    t.where || { function: t.function }, { value: t.bytes, count: t.blocks, stack_id: t.where?.stack_id, processes: t.where?.processes || 1 }));
  const failing = v.failing.slice(0, 5).map(p => h('li', null, `pid ${p.pid} (${p.command}): ${bytes(p.bytes)} in ${plural(p.blocks, 'block', 'blocks')}, ${plural(p.errors, 'heap error', 'heap errors')}`,
    p.unseen ? h('span', { class: 'muted' }, '; ' + p.unseen) : null));
  /* The process that peaked, by its program and test: a suite's pids say nothing. */
  const top = (run.processes || []).find(p => p.id === sum.peak.process_id);
  const peaked = `pid ${sum.peak.pid}` + (top ? ` (${top.exe.split('/').pop()}${testOf(top)})` : '');
  return h('section', { id: 'run-summary' },
    h('div', { class: 'verdict' }, h('span', { class: 'muted' }, 'gate: '), verdictBadge(v), ' ',
      h('span', { id: 'verdict-why' }, verdictText(v)),
      run.exit_code !== null ? h('span', { class: 'muted' }, ` · the program exited with status ${run.exit_code}`) : null),
    failing.length ? h('ul', { class: 'failing' }, failing) : null,
    h('div', { class: 'chips', id: 'leaked-by-class' }, classes.length ? classes : h('span', { class: 'muted' }, 'no blocks left at exit'), errs),
    h('div', { class: 'cards' },
      stackRanking('top-sites', 'Top leak sites', sites, [['bytes', r => bytes(r.value)], ['blocks', r => count(r.count)]]),
      stackRanking('peak-stacks', !sum.peak.pid ? 'Peak consumers' : sum.peak.at_peak
        ? `Peak consumers: ${peaked} at ${bytes(sum.peak.bytes)}, held then by`
        : `Peak: ${peaked} at ${bytes(sum.peak.bytes)}; most in use at their own peaks`,
      sum.peak.stacks, [[sum.peak.at_peak ? 'held at the peak' : 'peak in use', r => bytes(r.value)], ['allocs', r => count(r.count)]]),
      stackRanking('most-allocations', 'Most allocations', sum.most_allocations, [['allocs', r => count(r.value)]]),
      stackRanking('most-bytes', 'Most bytes allocated', sum.most_bytes, [['bytes', r => bytes(r.value)], ['allocs', r => count(r.count)]]),
      (sum.most_temporaries || []).length ? stackRanking('most-temporaries', 'Most temporary allocations (freed right after)',
        sum.most_temporaries, [['temporary', r => count(r.value)], ['allocs', r => count(r.count)]]) : null));
}

/* ---- allocation sizes ---- */

/* A bin's sizes (heapledger/size_bins.h: bin k holds 2^(k-1) .. 2^k - 1). */
function sizeRange(b) {
  if (!b.bin) return '0 B';
  if (b.low === b.high) return byteTick(b.low);
  return `${byteTick(b.low)} – ${b.high === null ? '' : '<' + byteTick(b.high + 1)}`;
}

/* The allocation-size histogram (GET .../sizes) as a table of bins with a
 * bar per bin, scaled to the bin with the most allocations. */
function sizeTable(id, sizes) {
  if (!sizes.bins.length)
    return h('p', { id, class: 'muted' }, sizes.counted || !sizes.processes ? 'no allocations'
      : 'no size histogram: stored by a heapledger that did not keep one');
  const most = Math.max(...sizes.bins.map(b => b.allocs));
  const rows = sizes.bins.map(b => {
    const fill = h('span', { class: 'size-fill' });
    fill.style.width = (100 * b.allocs / most).toFixed(1) + '%';
    return h('tr', { 'data-bin': b.bin }, h('td', { class: 'num' }, sizeRange(b)),
      num(b.allocs.toLocaleString('en-US')), h('td', { class: 'size-bar' }, fill),
      h('td', { class: 'num', 'data-bytes': b.bytes }, bytes(b.bytes)));
  });
  return h('table', { id, class: 'sizes' },
    h('tr', null, h('th', { class: 'num' }, 'size'), h('th', { class: 'num' }, 'allocations'), h('th', null, ''),
      h('th', { class: 'num' }, 'bytes allocated')), rows,
    h('tr', { class: 'total' }, h('td', { class: 'num' }, 'all'), num(sizes.allocs.toLocaleString('en-US')),
      h('td'), num(bytes(sizes.bytes))));
}

/* ---- one run ---- */

/* A run of a thousand processes lays out in a second: long lists show
 * their first SHOWN entries and a button for the rest. */
const SHOWN = 50;

function capped(render, items) {
  if (items.length <= SHOWN) return render(items);
  const box = h('div', null, render(items.slice(0, SHOWN)));
  box.append(h('button', { class: 'show-all', onclick: () => box.replaceChildren(render(items)) },
    `show all ${items.length}`));
  return box;
}

function processTree(procs, id = 'process-tree') {
  const kids = new Map();
  for (const p of procs) {
    const k = p.parent_id || 0;
    if (!kids.has(k)) kids.set(k, []);
    kids.get(k).push(p);
  }
  const known = new Set(procs.map(p => p.id));
  const list = parent => h('ul', null, (kids.get(parent) || []).map(p => h('li', { 'data-pid': p.pid, 'data-process': p.id },
    `${p.origin} pid ${p.pid}: `, p.test_name ? h('span', { class: 'test-name' }, `test ${p.test_name}: `) : null,
    h('b', null, p.exe.split('/').pop()), h('span', { class: 'muted argv' }, argsText(p.argv)), ` — ${exitText(p)}, `,
    `${bytes(p.leaked_bytes)} leaked in ${p.leaked_records} records, peak ${bytes(p.peak_bytes)}`,
    p.errors ? h('span', { class: 'error' }, `, ${p.errors} heap errors`) : null,
    fatalWhere(p),
    kids.has(p.id) ? list(p.id) : null)));
  /* Roots: no parent, or a parent not in this run. */
  for (const p of procs) if (p.parent_id && !known.has(p.parent_id)) kids.get(0)?.push(p) ?? kids.set(0, [p]);
  return h('div', { class: 'tree', id }, list(0));
}

/* A suite's processes grouped by test: the runner's name for it
 * ($HEAPLEDGER_TEST_NAME), else the program; each test's leaks (lost, not
 * suppressed), heap errors and how its processes ended. The leakiest and
 * the failing first. */
function testGroups(procs) {
  const groups = new Map();
  for (const p of procs) {
    const name = p.test_name || p.exe.split('/').pop();
    const key = (p.test_name ? 'test:' : 'program:') + name;
    if (!groups.has(key)) groups.set(key, { name, named: !!p.test_name, procs: [], bytes: 0, records: 0, errors: 0, cut: 0, peak: 0 });
    const g = groups.get(key);
    g.procs.push(p);
    g.bytes += p.leaked_bytes || 0;
    g.records += p.leaked_records || 0;
    g.errors += p.errors || 0;
    g.cut += p.no_exit_record ? 1 : 0;
    g.peak = Math.max(g.peak, p.peak_bytes || 0);
  }
  return [...groups.values()].sort((a, b) => b.errors - a.errors || b.cut - a.cut || b.bytes - a.bytes ||
    b.records - a.records || a.name.localeCompare(b.name));
}

/* How a test's processes ended: "exit 0 ×3, signal 6". */
function endings(procs) {
  const n = new Map();
  for (const p of procs) n.set(exitText(p), (n.get(exitText(p)) || 0) + 1);
  return [...n].map(([t, k]) => k > 1 ? `${t} ×${k}` : t).join(', ');
}

function testTable(groups) {
  const rows = [];
  for (const g of groups) {
    const tr = h('tr', { class: 'leak test', 'data-test': g.name, 'data-lost': g.bytes },
      h('td', null, g.named ? h('b', null, g.name) : h('span', null, g.name, h('span', { class: 'muted' }, ' (program)')),
        h('div', { class: 'muted argv' }, argvText(g.procs[0].argv))),
      num(g.procs.length), h('td', { class: g.cut ? 'error' : null }, endings(g.procs)),
      num(bytes(g.bytes)), num(g.records), h('td', { class: 'num' + (g.errors ? ' error' : '') }, g.errors), num(bytes(g.peak)));
    const open = h('tr', { class: 'leak-stack', hidden: true }, h('td', { colspan: 7 }));
    tr.onclick = () => {
      if (open.hidden) open.firstChild.replaceChildren(processTree(g.procs, null));
      open.hidden = !open.hidden;
    };
    rows.push(tr, open);
  }
  return h('table', { id: 'tests' }, h('tr', null, h('th', null, 'test (click for its processes)'),
    ['processes'].map(t => h('th', { class: 'num' }, t)), h('th', null, 'how they ended'),
    ['lost bytes', 'lost records', 'heap errors', 'peak heap'].map(t => h('th', { class: 'num' }, t))), rows);
}

function summaryTable(procs) {
  const tests = procs.some(p => p.test_name);
  const cols = [['pid', 'pid'], ['in use', 'in_use_bytes', bytes], ['blocks', 'in_use_blocks', count],
    ['allocs', 'allocs', count], ['frees', 'frees', count], ['allocated', 'bytes_allocated', bytes],
    ['peak', 'peak_bytes', bytes], ['inherited', 'inherited_bytes', bytes],
    ['dropped events', 'dropped_events', count], ['errors', 'errors']];
  return h('table', { id: 'summary' }, h('tr', null, tests ? h('th', null, 'test') : null,
    h('th', null, 'program'), cols.map(c => h('th', { class: 'num' }, c[0]))),
    procs.map(p => h('tr', { 'data-process': p.id }, tests ? h('td', { class: 'test' }, p.test_name || '') : null,
      h('td', null, p.exe.split('/').pop()), cols.map(c => num(c[2] ? c[2](p[c[1]]) : p[c[1]])))));
}

/* ---- charts (uPlot) ---- */

/* Byte ticks at powers of two (256 KiB, 512 KiB, 1 MiB), never 488.3 KiB. */
const BYTE_INCRS = Array.from({ length: 50 }, (_, k) => 2 ** k);

function byteTick(v) {
  if (!v) return '0';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (Number.isInteger(v) ? v : +v.toFixed(2)) + ' ' + u[i];
}

/* Seconds since start as a tick at steps of incr: in s, or in ms or µs
 * when the steps are that small (a run of 0.3 ms has ticks 50 µs apart,
 * not eleven "0 s"). */
function secondsTick(v, incr) {
  if (!(incr < 0.01)) return +v.toFixed(6) + ' s';
  if (incr >= 1e-5) return +(v * 1e3).toFixed(6) + ' ms';
  return +(v * 1e6).toFixed(3) + ' µs';
}

/* A time since start for the legend, to the microsecond. */
function seconds(v) {
  return v >= 0.01 || !v ? v.toFixed(3) + ' s' : v >= 1e-5 ? (v * 1e3).toFixed(3) + ' ms' : (v * 1e6).toFixed(1) + ' µs';
}

/* A range that shows a lone value (one sample) with room around it. */
function paddedRange(lo0) {
  return (u, min, max) => {
    const lo = Math.min(lo0, min), hi = max > lo ? max : lo + 1;
    return [lo, hi + (hi - lo) * 0.05];
  };
}

/* The legend shows the newest values until the cursor points elsewhere,
 * and again when it leaves (uPlot shows "--" without a cursor). */
function legendAtLast(u) {
  const last = u.data[0].length - 1;
  if (last >= 0 && u.cursor.idx == null) u.setLegend({ idx: last });
}

/* A colour of the stylesheet's scheme (app.css), for what canvases draw. */
function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function lineOpts(width, height, xAxis, series) {
  const axis = { stroke: css('--fg'), grid: { stroke: css('--grid') }, ticks: { stroke: css('--grid') } };
  return {
    width, height, legend: { live: true },
    scales: { x: { time: false, range: paddedRange(0) }, y: { range: paddedRange(0) } },
    series: [{ label: xAxis.label, value: (u, v) => v == null ? '--' : xAxis.value(v) }, ...series],
    axes: [{ ...axis, label: xAxis.label, values: (u, vals, ax, space, incr) => vals.map(v => xAxis.tick(v, incr)),
      incrs: xAxis.incrs, space: 60 },
      { ...axis, label: 'bytes', values: (u, vals) => vals.map(byteTick), incrs: BYTE_INCRS, size: 80 }],
    hooks: { ready: [legendAtLast], setCursor: [legendAtLast] },
  };
}

/* Heap in use over time, x in seconds since the process started. */
function timelineChart(el, tl, startedNs) {
  el.replaceChildren();
  const t0 = startedNs || tl.time_ns[0] || 0;
  const xs = tl.time_ns.map(t => Math.max(0, (t - t0) / 1e9));
  if (!xs.length) { el.append(h('p', { class: 'muted' }, 'No heap samples for this process.')); return; }
  const opts = lineOpts(Math.min(1100, window.innerWidth - 80), 260, {
    label: 'time since the process started', value: seconds, tick: secondsTick,
  }, [{ label: 'heap in use', stroke: '#c33', fill: 'rgba(204,51,51,0.12)', value: (u, v) => v == null ? '--' : bytes(v),
    points: { show: xs.length < 60, size: 7 } }]);
  window.hlCharts.timeline = new uPlot(opts, [xs, tl.bytes], el);
  el.setAttribute('data-points', xs.length);
}

/* A site of the consumed chart as the tables name one: its function, else
 * module+offset (code without debug information). */
function siteName(st) {
  return st.function || ((st.module || '?').split('/').pop() + '+0x' + (st.module_offset || 0).toString(16));
}

/* The legend rests on the sample where the heap peaked (what the chart is
 * read for), until the cursor points elsewhere. */
function legendAt(idx) {
  return u => { if (u.cursor.idx == null && idx >= 0) u.setLegend({ idx }); };
}

const SITE_COLOURS = ['#3b6fb6', '#d9822b', '#3a9a5b', '#c0392b', '#8e6bbf', '#8c6d46', '#d46fae', '#5fa8b5'];

/* Heap consumed over time by the top functions (heaptrack's "Consumed"):
 * one band per site, stacked, "other" on top, so the bands' top edge is the
 * heap in use. uPlot draws each series filled to 0 in order, so the series
 * are the running sums, the largest first; the legend shows each band's
 * own bytes (the difference), not the sum. */
function consumedChart(el, c, startedNs) {
  el.replaceChildren();
  const t0 = startedNs || c.time_ns[0] || 0;
  const xs = c.time_ns.map(t => Math.max(0, (t - t0) / 1e9));
  if (!xs.length || !c.has_series) {
    el.append(h('p', { class: 'muted' }, xs.length ? 'This process was stored without per-function series (before schema 20).'
      : 'No heap samples for this process.'));
    return;
  }
  const bands = [...c.sites.map((st, i) => ({ label: siteName(st), values: st.bytes, colour: SITE_COLOURS[i % SITE_COLOURS.length] })),
    { label: 'other', values: c.other, colour: '#b4b4b4' }];
  const sums = [];
  bands.forEach((b, k) => sums.push(b.values.map((v, i) => v + (k ? sums[k - 1][i] : 0))));
  const order = bands.map((b, k) => k).reverse();
  let peak = 0;
  c.total.forEach((v, i) => { if (v > c.total[peak]) peak = i; });
  const opts = lineOpts(Math.min(1100, window.innerWidth - 80), 300, {
    label: 'time since the process started', value: seconds, tick: secondsTick,
  }, order.map(k => ({ label: bands[k].label, stroke: bands[k].colour, fill: bands[k].colour, width: 1,
    value: (u, v, si, idx) => idx == null ? '--' : bytes(bands[k].values[idx]),
    points: { show: false } })));
  opts.hooks = { ready: [legendAt(peak)], setCursor: [legendAt(peak)] };
  window.hlCharts.consumed = new uPlot(opts, [xs, ...order.map(k => sums[k])], el);
  el.setAttribute('data-points', xs.length);
  el.setAttribute('data-sites', c.sites.map(siteName).join('\n'));
}

/* Merges siblings of the same name (one function called from several
 * places in its caller), which the call tree keeps apart by address. */
function mergeSiblings(node) {
  const byName = new Map();
  for (const c of node.children || []) {
    const m = byName.get(c.name);
    if (m) { m.value += c.value; m.children = (m.children || []).concat(c.children || []); }
    else byName.set(c.name, { name: c.name, value: c.value, children: c.children || [] });
  }
  node.children = [...byName.values()];
  node.children.forEach(mergeSiblings);
  return node;
}

/* ---- call trees: flame graph, bottom-up, callers and callees ---------------
 * All from the one call tree the API gives (/api/processes/ID/flame: the
 * query layer's, outermost frame first); nodes the server left out (under
 * a 4,000th of the whole) count as their caller's own bytes. */

/* Splits off every subtree rooted at main: {mains, rest}, rest being what
 * is left of n without them (null when nothing is). */
function splitMain(n) {
  if (n.name === 'main') return { mains: [n], rest: null };
  const mains = [], kids = [];
  for (const c of n.children || []) {
    const r = splitMain(c);
    mains.push(...r.mains);
    if (r.rest) kids.push(r.rest);
  }
  if (!mains.length) return { mains, rest: n };
  const v = n.value - mains.reduce((t, m) => t + m.value, 0);
  return { mains, rest: v > 0 ? { name: n.name, value: v, children: kids } : null };
}

/* The tree with the frames below main (the C runtime's start code) left
 * out: main's subtrees hang from the root; what ran outside main (static
 * constructors, other threads) stays as it was. */
function fromMain(tree) {
  const r = splitMain({ name: tree.name, value: tree.value, children: tree.children || [] });
  const rest = r.rest ? r.rest.children : [];
  return mergeSiblings({ name: tree.name, value: tree.value, children: [...r.mains, ...rest] });
}

/* Calls fn(path, self) for each node with bytes of its own: path is the
 * names from the outermost frame to it. */
function selfPaths(tree, fn) {
  const walk = (n, path) => {
    const kids = n.children || [];
    const self = n.value - kids.reduce((t, c) => t + c.value, 0);
    if (self > 0 && path.length) fn(path, self);
    for (const c of kids) walk(c, path.concat(c.name));
  };
  walk(tree, []);
}

/* Bottom-up: from where the bytes were allocated out to the callers. */
function bottomUp(tree) {
  const root = { name: tree.name, value: 0, children: [], kids: new Map() };
  selfPaths(tree, (path, self) => {
    root.value += self;
    let n = root;
    for (let i = path.length - 1; i >= 0; i--) {
      let c = n.kids.get(path[i]);
      if (!c) { c = { name: path[i], value: 0, children: [], kids: new Map() }; n.kids.set(path[i], c); n.children.push(c); }
      c.value += self;
      n = c;
    }
  });
  return root;
}

/* Per function: its own bytes, its total (bytes of the stacks through it,
 * once however often it recurs) and what its callers and callees add up to. */
function functionStats(tree) {
  const fns = new Map();
  const get = name => {
    if (!fns.has(name)) fns.set(name, { name, self: 0, total: 0, callers: new Map(), callees: new Map() });
    return fns.get(name);
  };
  selfPaths(tree, (path, self) => {
    get(path[path.length - 1]).self += self;
    const seen = new Set(), pairs = new Set();
    path.forEach((name, i) => {
      if (!seen.has(name)) { seen.add(name); get(name).total += self; }
      const key = i ? path[i - 1] + '\0' + name : null;
      if (key && !pairs.has(key)) {
        pairs.add(key);
        const a = get(path[i - 1]), b = get(name);
        a.callees.set(name, (a.callees.get(name) || 0) + self);
        b.callers.set(a.name, (b.callers.get(a.name) || 0) + self);
      }
    });
  });
  return [...fns.values()].sort((a, b) => b.total - a.total || b.self - a.self || a.name.localeCompare(b.name));
}

function flameChart(el, details, tree, opts) {
  el.replaceChildren();
  if (!tree.value) { el.append(h('p', { class: 'muted' }, 'Nothing to show.')); return null; }
  const pct = n => (100 * n.value / tree.value).toFixed(1);
  const chart = flamegraph.default().width(Math.min(1400, window.innerWidth - 60))
    .cellHeight(18).minFrameSize(2).transitionDuration(0).setDetailsElement(details)
    .inverted(!!opts.inverted)
    .sort(opts.leftHeavy ? (a, b) => b.value - a.value || (a.data.name < b.data.name ? -1 : 1) : true)
    .label(n => `${n.data.name}: ${bytes(n.value)} ${opts.unit} (${pct(n)}%)`)
    .setSearchHandler((found, value) => {
      const term = opts.search();
      details.textContent = term
        ? `"${term}": ${found.length} frames, ${bytes(value)} ${opts.unit} (${(100 * value / tree.value).toFixed(1)}% of ${bytes(tree.value)})`
        : '';
    });
  d3.select(el).datum(tree).call(chart);
  if (opts.search()) chart.search(opts.search());
  window.hlCharts.flame = chart;
  return chart;
}

/* The functions by total, and a click shows a function's callers and
 * callees (heaptrack's caller/callee view). */
function functionTable(box, stats, unit) {
  const detail = h('div', { id: 'caller-callee' });
  const pairs = (title, id, m) => h('div', { class: 'card' }, h('h3', null, title),
    m.size ? h('table', { id }, h('tr', null, h('th', null, 'function'), h('th', { class: 'num' }, 'bytes ' + unit)),
      [...m].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([n, v]) => h('tr', { 'data-fn': n }, h('td', { class: 'fn' }, n), num(bytes(v)))))
      : h('p', { class: 'muted' }, 'none'));
  const pick = f => detail.replaceChildren(h('h3', null, f.name),
    h('div', { class: 'cards' }, pairs('called from', 'callers', f.callers), pairs('calls', 'callees', f.callees)));
  const rows = stats.slice(0, 50).map(f => {
    const tr = h('tr', { class: 'leak', 'data-fn': f.name }, h('td', { class: 'fn' }, f.name), num(bytes(f.self)), num(bytes(f.total)));
    tr.onclick = () => pick(f);
    return tr;
  });
  box.replaceChildren(h('table', { id: 'functions' }, h('tr', null, h('th', null, 'function (click for callers and callees)'),
    h('th', { class: 'num' }, `self (bytes ${unit} there)`), h('th', { class: 'num' }, 'total (with callees)')), rows),
  ...(stats.length > 50 ? [h('p', { class: 'muted' }, `the 50 largest of ${stats.length} functions`)] : []), detail);
}

async function processViews(proc, box) {
  const tlEl = h('div', { id: 'timeline', class: 'chart' });
  const flameEl = h('div', { id: 'flame' });
  const details = h('div', { id: 'flame-details', class: 'muted' });
  const fnBox = h('div', { id: 'functions-box' });
  const kind = h('select', { id: 'flame-kind' }, h('option', { value: 'leaks' }, 'bytes leaked'),
    h('option', { value: 'all' }, 'bytes allocated'));
  const view = h('select', { id: 'flame-view' }, h('option', { value: 'top' }, 'top-down'),
    h('option', { value: 'left' }, 'left-heavy'), h('option', { value: 'bottom' }, 'bottom-up'));
  const below = h('input', { type: 'checkbox', id: 'flame-below-main' });
  const search = h('input', { id: 'flame-search', placeholder: 'search frames', size: 18 });
  let tree = null;
  const draw = () => {
    const t = below.checked ? mergeSiblings(structuredClone(tree)) : fromMain(structuredClone(tree));
    const unit = kind.value === 'leaks' ? 'leaked' : 'allocated';
    flameChart(flameEl, details, view.value === 'bottom' ? bottomUp(t) : t,
      { unit, leftHeavy: view.value !== 'top', inverted: false, search: () => search.value.trim() });
    functionTable(fnBox, functionStats(t), unit);
  };
  const load = async () => {
    tree = await api(`processes/${proc.id}/flame`, STATIC ? {} : { kind: kind.value }).then(t => t[kind.value] || t);
    draw();
  };
  kind.onchange = load;
  view.onchange = draw;
  below.onchange = draw;
  search.oninput = () => {
    const chart = window.hlCharts.flame;
    if (!chart) return;
    if (search.value.trim()) chart.search(search.value.trim()); else { chart.clear(); details.textContent = ''; }
  };
  const sizesBox = h('div', { id: 'process-sizes-box' });
  const consumedEl = h('div', { id: 'consumed', class: 'chart' });
  const who = `pid ${proc.pid}${testOf(proc)}`;
  box.replaceChildren(h('h2', null, `Heap in use over time (${who})`), tlEl,
    h('h2', null, `Heap consumed by the top functions (${who})`), consumedEl,
    h('h2', null, `Allocation sizes (${who})`), sizesBox,
    h('h2', null, 'Flame graph'), h('div', { class: 'bar' }, kind, view, search,
      h('label', null, below, ' frames below main'),
      h('span', { class: 'muted' }, 'click a frame to zoom, again to zoom out')),
    flameEl, details, h('h2', null, 'Functions'), fnBox);
  timelineChart(tlEl, await api(`processes/${proc.id}/timeline`), proc.started_ns);
  await api(`processes/${proc.id}/consumed`).then(c => consumedChart(consumedEl, c, proc.started_ns),
    e => consumedEl.replaceChildren(h('p', { class: 'muted' }, e.message)));
  sizesBox.replaceChildren(sizeTable('process-sizes', await api(`processes/${proc.id}/sizes`)));
  await load();
}

function leakPage(runId, state) {
  return api(`runs/${runId}/leaks`, { offset: state.offset, limit: PAGE, filter: state.filter, class: state.cls,
    group: state.group });
}

async function leakTable(run, box, state, first) {
  const data = await (first || leakPage(run.id, state));
  const filter = h('input', { id: 'leak-filter', placeholder: 'function, file or module', value: state.filter });
  const cls = h('select', { id: 'leak-class' },
    h('option', { value: LOST, selected: state.cls === LOST }, 'what leaks (lost, not suppressed)'),
    h('option', { value: '', selected: !state.cls }, 'every class'),
    VOCAB.leak_classes.map(c => h('option', { value: c.word, selected: c.word === state.cls }, c.label)));
  const group = h('select', { id: 'leak-group' },
    h('option', { value: 'site', selected: state.group === 'site' }, 'a row per site (every process added up)'),
    h('option', { value: 'record', selected: state.group !== 'site' }, 'a row per loss record'));
  const bySite = state.group === 'site';
  const apply = o => leakTable(run, box, { offset: o, filter: filter.value, cls: cls.value, group: group.value });
  group.onchange = () => apply(0);
  const everything = state.cls === LOST ? h('button', { type: 'button', class: 'link', id: 'leak-show-all',
    onclick: () => { cls.value = ''; apply(0); } }, 'show still reachable and suppressed too') : null;
  const rows = [];
  const procs = new Map(run.processes.map(p => [p.id, p]));
  const tests = run.processes.some(p => p.test_name);
  for (const l of data.rows) {
    /* a site in several processes names them by number; its test is
     * its largest record's */
    const tr = h('tr', { class: 'leak', 'data-leak': l.id, 'data-stack': l.stack_id, 'data-process': l.process_id,
      'data-processes': l.processes, 'data-site': l.fingerprint },
      num(l.processes > 1 ? `${l.processes} processes` : l.pid),
      tests ? h('td', { class: 'test' }, procs.get(l.process_id)?.test_name || '',
        l.tests > 1 ? h('span', { class: 'muted more-tests' }, ` and ${plural(l.tests - 1, 'other test', 'other tests')}`) : null) : null,
      classCell(l.kind, l.suppressed), num(bytes(l.bytes)), num(count(l.blocks)),
      h('td', null, whereText(l)));
    const open = h('tr', { class: 'leak-stack', hidden: true }, h('td', { colspan: tests ? 6 : 5 }));
    tr.onclick = async () => {
      if (!open.hidden) { open.hidden = true; return; }
      open.firstChild.replaceChildren(await recordStack(l));
      open.hidden = false;
    };
    rows.push(tr, open);
  }
  /* An HTML report counts its still reachable records rather than holding
   * them (ui/report_html.c); where to see them is said. */
  const out = data.left_out && state.cls !== LOST && (!state.cls || state.cls === 'reachable') && data.left_out.reachable
    ? h('p', { class: 'muted', id: 'leaks-left-out' }, `${data.left_out.reachable} still reachable records are not in this file: ` +
      `\`heapledger report --run ${data.left_out.run} --kind reachable\` or \`heapledger ui\` on the run's database shows them.`)
    : null;
  box.replaceChildren(h('form', { class: 'bar', onsubmit: e => { e.preventDefault(); apply(0); } },
    filter, cls, group, h('button', { type: 'submit' }, 'filter'), pager(data.total, state.offset, apply), everything), ...(out ? [out] : []),
  h('table', { id: 'leaks' }, h('tr', null, h('th', { class: 'num' }, bySite ? 'pid or processes' : 'pid'), tests ? h('th', null, 'test') : null, h('th', null, 'class'),
    h('th', { class: 'num' }, 'bytes'), h('th', { class: 'num' }, 'blocks'), h('th', null, 'where (click for the stack)')), rows));
}

/* A record's stack, which it carries ("stack", "stack_truncated"), or in
 * an HTML report the stack table's (every stack once, not in each row). */
async function recordStack(r, title) {
  if (!r.stack) return stackBlock(r.stack_id, title);
  return stackFrames({ frames: r.stack, truncated: r.stack_truncated }, title, r.stack_id);
}

/* A record's class; a suppressed record is shown as suppressed, never as
 * lost, with the class it would have had. */
function classCell(cls, suppressed) {
  if (suppressed || cls === 'suppressed')
    return h('td', { class: 'cls-suppressed', 'data-class': 'suppressed' }, 'suppressed',
      cls !== 'suppressed' ? h('span', { class: 'muted' }, ` (${cls})`) : null);
  return h('td', { class: 'cls-' + cls, 'data-class': cls }, cls);
}

/* Where a record is (the query layer picks the frame: the program's own
 * code first): function and file:line, or module+offset without debug
 * information. */
function whereText(l) {
  const mod = l.module ? l.module.split('/').pop() + '+0x' + (l.module_offset || 0).toString(16) : '?';
  return h('span', { class: 'where' }, h('span', { class: 'fn' }, l.function || mod), ' ',
    h('span', { class: 'muted' }, l.file ? l.file.split('/').pop() + ':' + l.line : (l.function ? mod : '')));
}

/* Every spelling of a leak class comes from the API (/api/vocabulary, from
 * heapledger/classes.h), and every heap error comes worded by the server
 * (the model's words, as the text report prints them): the page names no
 * class or kind itself. Loaded once before the first page. */
let VOCAB = null;

async function errorList(run, box) {
  const errs = await api(`runs/${run.id}/errors`);
  if (!errs.length) { box.replaceChildren(h('p', { class: 'muted' }, 'No heap errors.')); return; }
  const items = [];
  for (const e of errs) {
    const stack = frames => ({ frames, truncated: false });
    const freeStack = !e.block_freed ? null : e.free_stack.length ? stackFrames(stack(e.free_stack), 'freed at:')
      : h('div', { class: 'stack muted', 'data-role': 'free' }, 'freed at: not recorded (the hook kept no free stack for this block)');
    if (freeStack) freeStack.dataset.role = 'free';
    const at = stackFrames(stack(e.stack), `where (${e.call || e.kind}):`);
    at.dataset.role = 'where';
    const alloc = e.block_address ? stackFrames(stack(e.alloc_stack), 'allocated at:') : null;
    if (alloc) alloc.dataset.role = 'alloc';
    items.push(h('div', { class: 'heap-error', 'data-kind': e.kind, 'data-test': e.test || '' },
      h('b', { class: 'error' }, e.heading), ` in pid ${e.pid}${testOf({ test_name: e.test })}`,
      h('div', { class: 'muted' }, `address ${e.address} ${e.where}`), at, freeStack, alloc));
  }
  box.replaceChildren(...items);
}

/* On-demand leak checks (heapledger_check_leaks(), check_signal=), as
 * valgrind's leak_check shows them: each check's totals by kind with what
 * changed since the check before, then its loss records that grew. Each
 * check comes as the JSON report writes it (its "kinds" count what is new,
 * its "records" carry their stacks). */
function checkKinds(checks) {
  const seen = k => checks.some(c => c.kinds[k] && (c.kinds[k].blocks || c.kinds[k].new_blocks));
  return VOCAB.leak_classes.filter(c => seen(c.word)).map(c => [c.word, c.label]);
}

/* Records listed as valgrind's default --show-leak-kinds lists them (the
 * totals above count every kind): the lost classes. */
function listedKind(k) {
  return VOCAB.leak_classes.some(c => c.word === k && c.lost);
}

function kindWords(k) {
  return (VOCAB.leak_classes.find(c => c.word === k) || VOCAB.leak_classes[0]).phrase;
}

function signed(n) { return (n < 0 ? '-' : '+') + Math.abs(n).toLocaleString('en-US'); }

async function checkList(run, box) {
  const { checks } = await api(`runs/${run.id}/checks`);
  if (!checks.length) { box.replaceChildren(h('p', { class: 'muted' }, 'No on-demand leak checks.')); return; }
  const items = [], kinds = checkKinds(checks);
  for (const c of checks) {
    const rows = kinds.map(([k, label]) => {
      const now = c.kinds[k] || { bytes: 0, blocks: 0, new_bytes: 0, new_blocks: 0 };
      return h('tr', { 'data-kind': k }, h('td', { class: 'cls-' + k }, label),
        num(`${bytes(now.bytes)} (${signed(now.new_bytes)})`),
        num(`${now.blocks} (${signed(now.new_blocks)})`));
    });
    const listed = c.records.filter(r => !r.suppressed && listedKind(r.kind));
    const grew = listed.filter(r => r.new_bytes > 0 || r.new_indirect_bytes > 0 || r.new_blocks > 0);
    const recs = [];
    for (const r of grew) {
      const fresh = r.new_blocks > 0 && r.new_blocks === r.blocks ? 'new ' : '';
      recs.push(h('div', { class: 'check-record', 'data-kind': r.kind },
        `${(r.bytes + r.indirect_bytes).toLocaleString('en-US')} (${signed(r.new_bytes + r.new_indirect_bytes)}) bytes in ` +
        `${r.blocks} (${signed(r.new_blocks)}) blocks are ${kindWords(r.kind)} in ${fresh}loss record ${r.loss_record} of ${c.records_total}`,
        await recordStack(r, 'allocated at:')));
    }
    const same = listed.length - grew.length;
    items.push(h('div', { class: 'leak-check', 'data-seq': c.seq, 'data-pid': c.pid },
      h('b', null, `Leak check ${c.seq}`), ` in pid ${c.pid} (${c.by === 'signal' ? 'check_signal' : 'heapledger_check_leaks()'}` +
        `, ${((c.time_ns - run.started_ns) / 1e9).toFixed(3)} s after the run started)`,
      c.all_threads_stopped ? null : h('span', { class: 'error' }, ' a thread did not stop for the scan'),
      h('table', null, h('thead', null, h('tr', null, h('th', null, 'kind'), h('th', null, 'bytes'), h('th', null, 'blocks'))),
        h('tbody', null, rows)),
      ...recs,
      same ? h('p', { class: 'muted' }, `${same} loss record${same > 1 ? 's' : ''} that did not grow since the check before not shown`) : null,
      c.records_total > c.records.length ? h('p', { class: 'muted' },
        `${c.records_total - c.records.length} loss records of this check were not kept; the totals count them`) : null));
  }
  box.replaceChildren(...items);
}

/* A run still being written: the server's event stream says how many
 * processes it holds whenever that changes (ui/events.c); the page is drawn
 * again only when a process arrived or the run ended, so an open stack
 * stays open. Leaving the page closes the stream. */
let liveStream = null;

function stopLive() {
  if (liveStream) liveStream.close();
  liveStream = null;
}

function watchLive(id, known) {
  stopLive();
  const es = new EventSource(`api/runs/${id}/events`);
  liveStream = es;
  es.addEventListener('progress', ev => {
    const p = JSON.parse(ev.data);
    if (p.processes === known && !p.ended) return;
    stopLive();
    if (location.hash === '#/run/' + id) route();
  });
  es.onerror = () => { if (es.readyState === EventSource.CLOSED && liveStream === es) liveStream = null; };
}

async function pageRun(id) {
  /* The first page of leaks is asked for with the run, not after it. */
  /* A row per leak site, every process's records of it added up: a
   * suite's site leaking in 99 tests is one row, not 99. */
  const start = { offset: 0, filter: '', cls: LOST, group: 'site' };
  const firstLeaks = leakPage(id, start);
  firstLeaks.catch(() => {});
  const summary = api(`runs/${id}/summary`);
  summary.catch(() => {});
  const sizes = api(`runs/${id}/sizes`);
  sizes.catch(() => {});
  const run = await api('runs/' + id);
  const procs = run.processes;
  const views = h('div', { id: 'process-views' });
  /* The charts open on the process that leaked most (then peaked highest). */
  const leakiest = procs.reduce((best, p, i) => (p.leaked_bytes > procs[best].leaked_bytes ||
    (p.leaked_bytes === procs[best].leaked_bytes && p.peak_bytes > procs[best].peak_bytes)) ? i : best, 0);
  const pick = h('select', { id: 'process-pick' }, procs.map((p, i) => h('option', { value: i, selected: i === leakiest },
    `pid ${p.pid} (${p.origin}) ${p.exe.split('/').pop()}${testOf(p)}, ${bytes(p.leaked_bytes)} leaked`)));
  pick.onchange = () => processViews(procs[+pick.value], views);
  const leaksBox = h('div', { id: 'leaks-box' }), errBox = h('div', { id: 'errors-box' });
  const checksBox = h('div', { id: 'checks-box' });
  const live = !run.ended_ns && !STATIC;
  const tests = testGroups(procs);
  show(h('h1', null, `Run ${run.id}: ${run.program || '?'}`),
    h('p', null, argvText(run.argv), h('br'), h('span', { class: 'muted' },
      `${run.mode}, started ${when(run.started_ns)}`, run.ended_ns ? `, ${((run.ended_ns - run.started_ns) / 1e9).toFixed(2)} s` : ', still running',
      run.exit_code !== null ? `, exit status ${run.exit_code}` : '', run.git_commit ? `, commit ${run.git_commit}` : '',
      run.hostname ? `, on ${run.hostname}` : '')),
    STATIC ? null : h('p', null, run.previous_run
      ? h('a', { id: 'diff-previous', href: `#/diff${qs({ a: run.previous_run, b: run.id })}` }, `diff with run ${run.previous_run}, the one before`)
      : h('span', { class: 'muted' }, `the first run of ${run.program || '?'}`), ' · ',
      h('a', { href: '#/history' + qs({ program: run.program }) }, 'history of ' + (run.program || '?'))),
    runSummary(run, await summary),
    h('h2', null, procs.length > 1 ? `Allocation sizes (all ${procs.length} processes)` : 'Allocation sizes'),
    sizeTable('run-sizes', await sizes),
    tests.length > 1 ? [h('h2', null, `Tests (${tests.length})`), capped(testTable, tests)] : null,
    h('h2', null, `Processes (${procs.length})`), capped(processTree, procs),
    h('h2', null, 'Heap summary'), capped(summaryTable, procs),
    h('h2', null, 'Leaks'), leaksBox, h('h2', null, 'Heap errors'), errBox,
    h('h2', null, 'Leak checks'), checksBox,
    procs.length > 1 ? h('div', { class: 'bar' }, 'process: ', pick) : null, views);
  await leakTable(run, leaksBox, start, firstLeaks);
  await errorList(run, errBox);
  await checkList(run, checksBox);
  if (procs.length) await processViews(procs[leakiest], views);
  /* A daemon run still being written: its processes arrive as they end. */
  if (live) watchLive(id, procs.length);
}

/* ---- diff, history, search ---- */

/* The rows of a diff's changes of one kind (the JSON `heapledger diff
 * --format json` prints: one rule for the CLI and this page). */
function siteRows(changes, change) {
  return changes.filter(s => s.change === change).map(s => h('tr', { class: change, 'data-fingerprint': s.fingerprint },
    h('td', { class: 'cls-' + s.leak_class }, s.leak_class),
    num(bytes(s.bytes_a)), num(bytes(s.bytes_b)), num(s.blocks_a), num(s.blocks_b),
    h('td', null, h('span', { class: 'fn' }, s.function || '?'), ' ', h('span', { class: 'muted' }, s.fingerprint))));
}

async function pageDiff(params) {
  const a = h('input', { id: 'diff-a', size: 6, value: params.get('a') || '' });
  const b = h('input', { id: 'diff-b', size: 6, value: params.get('b') || '' });
  const form = h('form', { class: 'bar', onsubmit: e => { e.preventDefault(); location.hash = '#/diff' + qs({ a: a.value, b: b.value }); } },
    'run ', a, ' against run ', b, h('button', { type: 'submit' }, 'diff'));
  if (!params.get('a') || !params.get('b')) { show(h('h1', null, 'Diff of two runs'), form); return; }
  const d = await api('diff', { a: params.get('a'), b: params.get('b') });
  const head = () => h('tr', null, ['class', `bytes in run ${d.run_a}`, `bytes in run ${d.run_b}`,
    `blocks in run ${d.run_a}`, `blocks in run ${d.run_b}`, 'site'].map(t => h('th', null, t)));
  show(h('h1', null, `Run ${d.run_a} → run ${d.run_b}`), form,
    h('p', { class: 'muted', id: 'diff-counts' }, `${d.new} new, ${d.fixed} fixed, ${d.changed} changed, ${d.unchanged} unchanged leak sites`),
    h('h2', null, `New leak sites (${d.new})`), h('table', { id: 'diff-new' }, head(), siteRows(d.changes, 'new')),
    h('h2', null, `Fixed leak sites (${d.fixed})`), h('table', { id: 'diff-fixed' }, head(), siteRows(d.changes, 'fixed')),
    h('h2', null, `Changed (${d.changed})`), h('table', { id: 'diff-both' }, head(), siteRows(d.changes, 'changed')));
}

/* A site's state in the newest run: new (first leaked there), suppressed
 * (leaked there, but only under a suppression, since the run after its last
 * unsuppressed leak), fixed (not leaked there any more) or still leaking. */
function siteState(s, newest) {
  const runs = s.bytes_by_run;
  if (s.last_run !== newest && runs.length && runs[runs.length - 1].suppressed) {
    const since = runs.find(r => r.run > s.last_run && r.suppressed);
    return h('span', { class: 'state-suppressed' }, `suppressed since run ${since.run}`);
  }
  if (s.last_run !== newest) return h('span', { class: 'state-fixed' }, `fixed after run ${s.last_run}`);
  if (s.first_run === newest) return h('span', { class: 'state-new' }, 'new');
  return 'still leaking';
}

/* A history site's bytes in the newest run (bytes_by_run: oldest first). */
const newestBytes = s => s.bytes_by_run.length ? s.bytes_by_run[s.bytes_by_run.length - 1].bytes : 0;

async function pageHistory(params) {
  const program = params.get('program') || '';
  const hist = await api('history', { program });
  const runs = hist.runs;
  const newest = runs.length ? runs[runs.length - 1].id : 0;
  const chartEl = h('div', { id: 'history-chart', class: 'chart' });
  /* the lost classes (what a leak site is made of), as the vocabulary lists them */
  const lost = VOCAB.leak_classes.filter(c => c.lost);
  const sites = hist.sites.slice().sort((a, b) => (b.last_run === newest) - (a.last_run === newest) ||
    newestBytes(b) - newestBytes(a) || b.last_run - a.last_run);
  show(h('h1', null, `History of ${program}`),
    h('p', { class: 'muted' }, `${runs.length} runs, ${hist.sites.length} leak sites; bytes leaked by class per run, oldest first.`), chartEl,
    h('h2', null, 'Leak sites'),
    h('table', { id: 'history-sites' }, h('tr', null, ['site', 'state', 'first seen', 'last seen', 'runs', 'bytes in the newest run']
      .map(t => h('th', null, t))),
      sites.map(s => h('tr', { 'data-fingerprint': s.fingerprint },
        h('td', null, h('span', { class: 'fn' }, s.function || '?'), ' ', h('span', { class: 'muted' }, s.fingerprint)),
        h('td', null, siteState(s, newest)),
        h('td', null, h('a', { href: '#/run/' + s.first_run }, 'run ' + s.first_run)),
        h('td', null, h('a', { href: '#/run/' + s.last_run }, 'run ' + s.last_run)),
        num(s.runs), num(bytes(newestBytes(s)))))),
    h('h2', null, 'Runs'),
    h('table', { id: 'history' }, h('tr', null, ['run', 'started', 'commit', ...lost.map(c => c.label), '']
      .map(t => h('th', null, t))),
      runs.slice().reverse().map((r, i, all) => h('tr', null, h('td', null, h('a', { href: '#/run/' + r.id }, r.id)),
        h('td', { class: 'when' }, when(r.started_ns)), h('td', null, (r.git_commit || '').slice(0, 12)),
        ...lost.map(c => num(bytes(r.leaked[c.word] || 0))),
        h('td', null, all[i + 1] ? h('a', { href: '#/diff' + qs({ a: all[i + 1].id, b: r.id }) }, 'diff with previous') : '')))));
  if (!runs.length) return;
  /* x: run ids (ticks at whole runs only, with the commit when known). */
  const commit = new Map(runs.map(r => [r.id, (r.git_commit || '').slice(0, 8)]));
  const runTick = v => Number.isInteger(v) && commit.has(v) ? `run ${v}` + (commit.get(v) ? ' ' + commit.get(v) : '') : '';
  const palette = ['#469', '#b00', '#c60', '#a80', '#777', '#595'];
  const classes = lost.map((c, i) => [c.word, palette[i % palette.length], c.label]);
  const opts = lineOpts(Math.min(1100, window.innerWidth - 80), 240,
    { label: 'run', value: runTick, tick: runTick, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] },
    classes.map(([c, color, name]) => ({ label: name || c, stroke: color, value: (u, v) => v == null ? '--' : bytes(v),
      points: { show: runs.length < 60, size: 6 } })));
  opts.scales.x.range = (u, min, max) => [min - 0.5, max + 0.5];
  window.hlCharts.history = new uPlot(opts, [runs.map(r => r.id), ...classes.map(([c]) => runs.map(r => r.leaked[c] || 0))], chartEl);
}

async function pageSearch(params) {
  const q = params.get('q') || '';
  const input = h('input', { id: 'search-q', placeholder: 'function, file or module', value: q });
  const form = h('form', { class: 'bar', onsubmit: e => { e.preventDefault(); location.hash = '#/search' + qs({ q: input.value }); } },
    input, h('button', { type: 'submit' }, 'search'));
  if (!q) { show(h('h1', null, 'Search'), form); return; }
  const res = await api('search', { q });
  show(h('h1', null, `Search: ${q}`), form,
    h('table', { id: 'search-results' }, h('tr', null, ['function', 'file', 'module', 'runs', 'first', 'last'].map(t => h('th', null, t))),
      res.rows.map(r => h('tr', null, h('td', { class: 'fn' }, r.function || '?'),
        h('td', null, r.file ? r.file + ':' + r.line : ''), h('td', { class: 'muted' }, r.module || ''),
        num(r.runs), h('td', null, h('a', { href: '#/run/' + r.first_run }, r.first_run)),
        h('td', null, h('a', { href: '#/run/' + r.last_run }, r.last_run))))));
}

/* ---- routing ---- */

async function route() {
  const hash = location.hash.replace(/^#/, '') || (STATIC ? '/run/' + STATIC.run : '/');
  const [path, query] = hash.split('?');
  const params = new URLSearchParams(query || '');
  stopLive();
  try {
    document.body.removeAttribute('data-ready');
    if (!VOCAB) VOCAB = await api('vocabulary');
    let m;
    if ((m = path.match(/^\/run\/(\d+)$/))) await pageRun(m[1]);
    else if (path === '/diff') await pageDiff(params);
    else if (path === '/search') await pageSearch(params);
    else if (path === '/history') await pageHistory(params);
    else await pageRuns(params);
  } catch (e) {
    show(h('p', { class: 'error' }, 'Error: ' + e.message));
  }
  document.body.setAttribute('data-ready', location.hash || '#');
}

/* ---- light and dark ---- */

/* The scheme: the system's preference until the header's switch picks one,
 * which is remembered (app.css reads html[data-theme]). */
const THEME_KEY = 'heapledger-theme';

function setTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

function isDark() {
  return getComputedStyle(document.documentElement).colorScheme === 'dark';
}

function themeSwitch() {
  const b = document.getElementById('theme');
  if (!b) return;
  const label = () => { b.textContent = isDark() ? 'light' : 'dark'; b.title = `switch to the ${b.textContent} scheme`; };
  b.onclick = () => {
    const next = isDark() ? 'light' : 'dark';
    setTheme(next);
    try { localStorage.setItem(THEME_KEY, next); } catch (e) { /* a file: page may have no storage */ }
    label();
    route(); /* the charts take the scheme's colours when drawn */
  };
  label();
}

try { setTheme(localStorage.getItem(THEME_KEY)); } catch (e) { /* no storage: the system's preference */ }
themeSwitch();
if (STATIC) document.querySelector('header nav')?.remove();
window.addEventListener('hashchange', route);
route();
