// The coordkit lab page: plain JavaScript and SVG, no build step, no
// network beyond this server. Every control sends one shell command line
// to POST /api/command; everything shown comes from GET /api/events.
'use strict';

const token = new URLSearchParams(location.search).get('token');
function api(path) { return token ? path + (path.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(token) : path; }
const $ = id => document.getElementById(id);
const NS = 'http://www.w3.org/2000/svg';
function el(tag, attrs, parent, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

const COLORS = { leader: '#f0b429', follower: '#6fa8dc', candidate: '#e69138', down: '#bbbbbb', shutdown: '#bbbbbb' };
const MAX_WINDOW_NS = 60e9, MIN_WINDOW_NS = 15e9, KEEP_NS = 300e9;
let firstNs = null; // the first moment this page saw

const lab = { nodes: 0, baseDelay: 0, snap: null, load: null, serverNs: 0, serverAt: 0 };
// The timeline as it grows: per node role segments and fault windows,
// term changes, client operations and load samples.
const tl = { roles: {}, faults: {}, terms: [], ops: [], load: [] };

function nowNs() { return lab.serverNs + (performance.now() - lab.serverAt) * 1e6; }
function seen(atNs) { if (firstNs === null && atNs) firstNs = atNs; if (atNs >= lab.serverNs) { lab.serverNs = atNs; lab.serverAt = performance.now(); } }

// ---- commands -------------------------------------------------------------
async function send(line) {
  $('cmd-error').textContent = '';
  let j;
  try {
    const r = await fetch(api('/api/command'), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ line }) });
    j = await r.json();
  } catch (e) { j = { ok: false, error: String(e) }; }
  if (!j.ok) $('cmd-error').textContent = line + ': ' + (j.error || 'failed');
  return j;
}
function quote(s) { return /[\s"#]/.test(s) || s === '' ? '"' + s.replace(/"/g, '') + '"' : s; }

// ---- ring of nodes ----------------------------------------------------------
function pos(i) {
  const a = -Math.PI / 2 + 2 * Math.PI * (i - 1) / lab.nodes;
  return [210 + 150 * Math.cos(a), 210 + 150 * Math.sin(a)];
}

// The ring's elements are built once and updated in place, so that a
// click is never lost to a redraw (status events come up to 20 times a
// second under load).
const ring = { built: 0, links: {}, nodes: {} };

function buildRing() {
  const svg = $('ring');
  svg.textContent = '';
  ring.links = {}; ring.nodes = {};
  for (let a = 1; a <= lab.nodes; a++) {
    for (let b = a + 1; b <= lab.nodes; b++) {
      const [x1, y1] = pos(a), [x2, y2] = pos(b);
      const mx = (x1 + x2) / 2, my = (y1 + y2) / 2;
      const g = el('g', { class: 'link', id: 'link-' + a + '-' + b, 'data-cut': '' }, svg);
      const r = {
        g, x1, y1, x2, y2, mx, my,
        base: el('line', { x1, y1, x2, y2, stroke: '#999', 'stroke-width': 2 }, g),
        cut: el('line', { x1, y1, x2, y2, stroke: '#d33', 'stroke-width': 3, 'stroke-dasharray': '6 4', visibility: 'hidden' }, g),
        mark: el('text', { x: mx, y: my + 5, 'text-anchor': 'middle', fill: '#d33', 'font-size': 16, 'font-weight': 'bold' }, g, ''),
        label: el('text', { x: mx, y: my - 6, 'text-anchor': 'middle', fill: '#d33', 'font-size': 11 }, g, ''),
        delay: el('text', { x: mx, y: my + 16, 'text-anchor': 'middle', fill: '#555', 'font-size': 11 }, g, ''),
      };
      // A wide transparent stroke makes the link easy to click.
      const hit = el('line', { x1, y1, x2, y2, stroke: 'transparent', 'stroke-width': 14 }, g);
      hit.addEventListener('click', ev => linkMenu(ev, a, b));
      ring.links[a + '-' + b] = r;
    }
  }
  for (let i = 1; i <= lab.nodes; i++) {
    const [x, y] = pos(i);
    const g = el('g', { class: 'node', id: 'node-' + i }, svg);
    const r = {
      g,
      circle: el('circle', { cx: x, cy: y, r: 38 }, g),
      name: el('text', { x, y: y - 16, 'text-anchor': 'middle', 'font-weight': 'bold', 'font-size': 14 }, g, 'n' + i),
      state: el('text', { x, y: y - 1, 'text-anchor': 'middle', 'font-size': 12 }, g, ''),
      term: el('text', { x, y: y + 13, 'text-anchor': 'middle', 'font-size': 11 }, g, ''),
      index: el('text', { x, y: y + 26, 'text-anchor': 'middle', 'font-size': 10 }, g, ''),
    };
    g.addEventListener('click', ev => { const n = lab.snap.status.nodes[i - 1]; nodeMenu(ev, n); });
    ring.nodes[i] = r;
  }
  ring.built = lab.nodes;
}

function set(e, attrs) { for (const k in attrs) e.setAttribute(k, attrs[k]); }

function drawRing() {
  const snap = lab.snap;
  if (!snap) return;
  if (ring.built !== lab.nodes) buildRing();
  const link = {};
  for (const l of snap.links) link[l.from + '-' + l.to] = l;
  for (let a = 1; a <= lab.nodes; a++) {
    for (let b = a + 1; b <= lab.nodes; b++) {
      const r = ring.links[a + '-' + b];
      const ab = link[a + '-' + b], ba = link[b + '-' + a];
      r.g.setAttribute('data-cut', (ab.cut ? 'ab' : '') + (ba.cut ? 'ba' : ''));
      r.mark.textContent = ''; r.label.textContent = '';
      if (!ab.cut && !ba.cut) {
        set(r.base, { stroke: '#999' });
        set(r.cut, { visibility: 'hidden' });
      } else if (ab.cut && ba.cut) {
        set(r.base, { stroke: 'transparent' });
        set(r.cut, { visibility: 'visible', x1: r.x1, y1: r.y1, x2: r.x2, y2: r.y2 });
        r.mark.textContent = '✕';
      } else {
        // One way: red on the half next to the sender whose messages drop.
        const [sx, sy, from, to] = ab.cut ? [r.x1, r.y1, a, b] : [r.x2, r.y2, b, a];
        set(r.base, { stroke: '#999' });
        set(r.cut, { visibility: 'visible', x1: sx, y1: sy, x2: r.mx, y2: r.my });
        r.label.textContent = from + '→' + to + ' cut';
      }
      const d1 = ab.delay_ms, d2 = ba.delay_ms;
      let label = '';
      if (d1 !== lab.baseDelay || d2 !== lab.baseDelay || ab.jitter_ms || ba.jitter_ms || ab.loss || ba.loss) {
        label = d1 === d2 ? fmtMs(d1) : a + '→' + b + ' ' + fmtMs(d1) + ', ' + b + '→' + a + ' ' + fmtMs(d2);
        if (ab.jitter_ms) label += ' ±' + fmtMs(ab.jitter_ms);
        if (ab.loss || ba.loss) label += ' loss ' + Math.max(ab.loss, ba.loss);
      }
      r.delay.textContent = label;
    }
  }
  for (const n of snap.status.nodes) {
    const r = ring.nodes[n.id];
    const state = n.up ? n.state : 'down';
    set(r.g, { 'data-state': state, 'data-term': n.term, 'data-paused': n.paused });
    set(r.circle, { fill: COLORS[state] || '#ddd', stroke: n.paused ? '#7b3fa0' : '#444', 'stroke-width': n.paused ? 4 : 1.5, 'stroke-dasharray': n.paused ? '5 3' : 'none' });
    r.state.textContent = n.paused ? 'paused ' + state : state;
    r.term.textContent = n.up ? 'term ' + n.term : '';
    r.index.textContent = n.up ? 'c' + n.commit + ' a' + n.applied : 'crashed';
  }
}

function fmtMs(v) { return (Math.round(v * 100) / 100) + 'ms'; }

// ---- menus ------------------------------------------------------------------
function openMenu(ev, title, items) {
  ev.stopPropagation();
  const m = $('menu');
  m.textContent = '';
  const b = document.createElement('b'); b.textContent = title; m.appendChild(b);
  for (const it of items) {
    const row = document.createElement('div');
    const btn = document.createElement('button');
    btn.id = 'menu-' + it.id; btn.textContent = it.label;
    let input;
    if (it.input !== undefined) {
      input = document.createElement('input'); input.id = 'menu-' + it.id + '-arg'; input.size = 5; input.value = it.input;
    }
    btn.addEventListener('click', async e => { e.stopPropagation(); closeMenu(); await send(it.line(input && input.value)); });
    row.appendChild(btn);
    if (input) row.appendChild(input);
    m.appendChild(row);
  }
  const box = $('left').getBoundingClientRect();
  m.style.left = Math.min(ev.clientX - box.left + 8, 300) + 'px';
  m.style.top = (ev.clientY - box.top + 8) + 'px';
  m.classList.remove('hidden');
}
function closeMenu() { $('menu').classList.add('hidden'); }
document.addEventListener('click', e => { if (!$('menu').contains(e.target)) closeMenu(); });

function nodeMenu(ev, n) {
  const id = n.id;
  openMenu(ev, 'node ' + id + (n.up ? ' (' + n.state + ', term ' + n.term + ')' : ' (crashed)'), [
    { id: 'crash', label: 'crash', line: () => 'crash ' + id },
    { id: 'restart', label: 'restart', line: () => 'restart ' + id },
    { id: 'pause', label: 'pause for', input: '3s', line: d => 'pause ' + id + ' ' + d },
    { id: 'resume', label: 'resume', line: () => 'resume ' + id },
    { id: 'isolate', label: 'isolate', line: () => 'isolate ' + id },
  ]);
}
function linkMenu(ev, a, b) {
  openMenu(ev, 'link ' + a + '–' + b, [
    { id: 'cut-ab', label: 'cut ' + a + '→' + b, line: () => 'cut ' + a + ' ' + b },
    { id: 'cut-ba', label: 'cut ' + b + '→' + a, line: () => 'cut ' + b + ' ' + a },
    { id: 'cut-both', label: 'cut both ways', line: () => 'cut ' + a + ' ' + b + ' --both' },
    { id: 'heal-ab', label: 'heal ' + a + '→' + b, line: () => 'heal ' + a + ' ' + b },
    { id: 'heal-ba', label: 'heal ' + b + '→' + a, line: () => 'heal ' + b + ' ' + a },
    { id: 'heal-both', label: 'heal both ways', line: () => 'heal ' + a + ' ' + b + ' --both' },
    { id: 'delay', label: 'delay both ways', input: '20ms', line: d => 'delay ' + a + ' ' + b + ' ' + d },
  ]);
}

// ---- state from the stream ----------------------------------------------------
function applyState(s) {
  if (lab.run && s.run !== lab.run) {
    // Another run of the lab on this address: what the page drew is gone.
    for (const k of Object.keys(tl)) tl[k] = Array.isArray(tl[k]) ? [] : {};
    firstNs = null; lab.serverNs = 0; lab.snap = null;
  }
  lab.run = s.run;
  lab.nodes = s.nodes; lab.baseDelay = s.base_delay_ms;
  const via = $('via');
  if (via.options.length !== lab.nodes + 1) {
    via.length = 1;
    for (let i = 1; i <= lab.nodes; i++) { const o = document.createElement('option'); o.value = i; o.textContent = 'node ' + i; via.appendChild(o); }
  }
  $('log').textContent = '';
  for (const c of s.commands) applyCommand(c, true);
  if (s.snapshot) applySnap(s.snapshot);
  applyLoad({ at_ns: lab.serverNs, ...s.load });
}

function applySnap(snap) {
  seen(snap.at_ns);
  lab.snap = snap;
  const st = snap.status;
  $('summary').textContent = st.summary;
  const ld = $('leader');
  ld.dataset.leader = st.leader; ld.dataset.term = st.term;
  const maxTerm = Math.max(0, ...st.nodes.map(n => n.term));
  ld.textContent = st.leader ? 'leader ' + st.leader + ' · term ' + st.term : 'no leader (highest term ' + maxTerm + ')';
  const t = snap.at_ns;
  const cutTouch = {};
  for (const l of snap.links) if (l.cut) { cutTouch[l.from] = true; cutTouch[l.to] = true; }
  for (const n of st.nodes) {
    const role = n.up ? n.state : 'down';
    extend(tl.roles, n.id, t, role, n.term, prev => {
      if (n.up && prev && prev.term !== n.term) tl.terms.push({ t, node: n.id, term: n.term });
    });
    const fault = !n.up ? 'crashed' : n.paused ? 'paused' : cutTouch[n.id] ? 'cut off' : '';
    extend(tl.faults, n.id, t, fault, 0);
  }
  drawRing();
}

// extend closes the open segment of node id at t and opens one with key
// when key or term changed.
function extend(map, id, t, key, term, onChange) {
  const segs = map[id] || (map[id] = []);
  const open = segs[segs.length - 1];
  if (open && open.key === key && open.term === term) return;
  if (onChange) onChange(open);
  if (open) open.t1 = t;
  segs.push({ t0: t, t1: null, key, term });
}

function applyLoad(ev) {
  if (ev.at_ns) seen(ev.at_ns);
  lab.load = ev;
  const on = ev.running;
  const btn = $('load-toggle');
  btn.dataset.on = on; btn.textContent = on ? 'stop' : 'start';
  if (on && document.activeElement !== $('load-rate')) $('load-rate').value = ev.rate;
  const tp = $('load-tput');
  tp.dataset.value = Math.round(ev.writes_per_s || 0);
  tp.textContent = Math.round(ev.writes_per_s || 0);
  $('load-p50').textContent = on && ev.p50_ms ? ev.p50_ms.toFixed(2) : '–';
  $('load-p99').textContent = on && ev.p99_ms ? ev.p99_ms.toFixed(2) : '–';
  $('load-counts').textContent = (ev.writes_ok || 0) + ' ok, ' + (ev.writes_fail || 0) + ' fail, ' + (ev.writes_unknown || 0) + ' unknown' + (on ? ' at ' + ev.rate + '/s' : '');
  if (on || tl.load.length) tl.load.push({ t: ev.at_ns || nowNs(), v: on ? ev.writes_per_s : 0 });
}

function applyCommand(c, replay) {
  seen(c.at_ns);
  const o = c.output || {};
  const li = document.createElement('li');
  if (c.n) li.value = c.n;
  const src = document.createElement('span'); src.className = 'src'; src.textContent = '[' + c.source + '] ';
  li.appendChild(src);
  li.appendChild(document.createTextNode(c.line + ' → ' + (o.ok ? summarize(o) : 'error: ' + o.error)));
  if (!o.ok) li.className = 'bad';
  const log = $('log');
  log.appendChild(li);
  while (log.children.length > 50) log.removeChild(log.firstChild);
  log.scrollTop = log.scrollHeight;
  if (o.op && !replay) tl.ops.push({ t: c.at_ns, node: o.node || o.entry, outcome: o.outcome || (o.ok ? 'ok' : 'fail'), label: o.op + ' ' + o.key });
  if (o.cmd === 'check' && o.ok) showCheck(o);
}

function summarize(o) {
  if (o.message) return o.message;
  if (o.op) {
    let s = o.outcome;
    if (o.op === 'get') s += o.found ? ' ' + o.key + ' = "' + o.value + '"' : ' ' + o.key + ' not found';
    if (o.op === 'cas') s += o.swapped ? ' swapped' : ' not swapped';
    return s + ' (node ' + o.node + ', ' + o.latency_ms.toFixed(2) + 'ms)';
  }
  if (o.cmd === 'check') return o.linearizable ? 'linearizable' : 'NOT linearizable (' + o.verdict + ')';
  if (o.cmd === 'load') return o.running ? 'load ' + o.rate + '/s' : 'load off';
  if (o.cmd === 'leader') return o.leader ? 'leader ' + o.leader + ' term ' + o.term : 'no leader';
  if (o.file) return 'wrote ' + o.file.split('/').pop();
  if (o.cmd === 'status') return o.summary;
  return 'ok';
}

function showCheck(o) {
  $('check-result').textContent = (o.linearizable ? '✔ linearizable: ' : o.verdict === 'Unknown' ? '? unknown (checker timed out): ' : '✘ NOT linearizable: ') +
    o.ops + ' operations on ' + o.keys + ' keys' + (o.illegal_keys ? ' — keys ' + o.illegal_keys.join(', ') : '');
}

// ---- timeline lanes ---------------------------------------------------------------
const LANE_H = 34, LEFT = 56, LOAD_H = 50;
function drawLanes() {
  const svg = $('lanes');
  const W = svg.clientWidth || 1200;
  const n = lab.nodes;
  const H = 20 + n * LANE_H + LOAD_H + 20;
  svg.setAttribute('height', H);
  svg.textContent = '';
  const now = nowNs();
  // The window grows with what the page has seen, from 15 s up to 60 s.
  const WINDOW_NS = Math.min(MAX_WINDOW_NS, Math.max(MIN_WINDOW_NS, Math.ceil((now - (firstNs || now) + 2e9) / 5e9) * 5e9));
  const t0 = now - WINDOW_NS;
  const X = t => LEFT + (W - LEFT - 10) * (t - t0) / WINDOW_NS;
  const step = WINDOW_NS > 30e9 ? 10 : 5;
  for (let s = 0; s <= WINDOW_NS / 1e9; s += step) {
    const x = X(now - s * 1e9);
    el('line', { x1: x, y1: 12, x2: x, y2: H - 16, stroke: '#eee' }, svg);
    el('text', { x, y: H - 4, 'text-anchor': 'middle', 'font-size': 10, fill: '#888' }, svg, s ? '-' + s + 's' : 'now');
  }
  for (let i = 1; i <= n; i++) {
    const y = 14 + (i - 1) * LANE_H;
    el('text', { x: 4, y: y + 20, 'font-size': 12, 'font-weight': 'bold' }, svg, 'n' + i);
    for (const s of tl.roles[i] || []) {
      const a = Math.max(X(s.t0), LEFT), b = X(s.t1 === null ? now : s.t1);
      if (b < LEFT) continue;
      el('rect', { x: a, y: y + 6, width: Math.max(b - a, 0.5), height: LANE_H - 14, fill: COLORS[s.key] || '#ddd' }, svg);
    }
    for (const s of tl.faults[i] || []) {
      if (!s.key) continue;
      const a = Math.max(X(s.t0), LEFT), b = X(s.t1 === null ? now : s.t1);
      if (b < LEFT) continue;
      const r = el('rect', { x: a, y: y + 2, width: Math.max(b - a, 0.5), height: LANE_H - 6, fill: '#000', 'fill-opacity': 0.18 }, svg);
      el('title', {}, r, s.key);
      if (b - a > 40) el('text', { x: a + 3, y: y + LANE_H - 6, 'font-size': 9, fill: '#333' }, svg, s.key);
    }
  }
  for (const m of tl.terms) {
    if (m.t < t0) continue;
    const y = 14 + (m.node - 1) * LANE_H;
    el('line', { x1: X(m.t), y1: y + 2, x2: X(m.t), y2: y + LANE_H - 4, stroke: '#333', 'stroke-width': 1.5 }, svg);
    el('text', { x: X(m.t) + 2, y: y + 12, 'font-size': 9 }, svg, 'T' + m.term);
  }
  const OC = { ok: '#2a7', fail: '#d33', unknown: '#e69138' };
  for (const o of tl.ops) {
    if (o.t < t0 || !o.node) continue;
    const y = 14 + (o.node - 1) * LANE_H + LANE_H / 2 - 1;
    const c = el('circle', { cx: X(o.t), cy: y, r: 5, fill: OC[o.outcome] || '#888', stroke: '#fff' }, svg);
    el('title', {}, c, o.label + ': ' + o.outcome);
  }
  // Load lane: writes/s that succeeded, last second, as sampled.
  const ly = 14 + n * LANE_H + 6;
  el('text', { x: 4, y: ly + 20, 'font-size': 11 }, svg, 'load');
  el('line', { x1: LEFT, y1: ly + LOAD_H - 8, x2: W - 10, y2: ly + LOAD_H - 8, stroke: '#ccc' }, svg);
  const pts = tl.load.filter(p => p.t >= t0 - 1e9);
  const max = Math.max(10, ...pts.map(p => p.v));
  if (pts.length) {
    const d = pts.map((p, i) => (i ? 'L' : 'M') + Math.max(X(p.t), LEFT).toFixed(1) + ' ' + (ly + LOAD_H - 8 - (LOAD_H - 14) * p.v / max).toFixed(1)).join(' ');
    el('path', { d, fill: 'none', stroke: '#36c', 'stroke-width': 1.5 }, svg);
  }
  el('text', { x: LEFT + 2, y: ly + 4, 'font-size': 9, fill: '#36c' }, svg, Math.round(max) + '/s');
  // Forget what scrolled out long ago.
  const old = now - KEEP_NS;
  for (const map of [tl.roles, tl.faults]) for (const k in map) map[k] = map[k].filter(s => s.t1 === null || s.t1 > old);
  tl.terms = tl.terms.filter(m => m.t > old); tl.ops = tl.ops.filter(o => o.t > old); tl.load = tl.load.filter(p => p.t > old);
}
setInterval(drawLanes, 200);

// ---- controls ---------------------------------------------------------------
$('partition-btn').addEventListener('click', () => send('partition ' + $('partition-input').value.replace(/\s+/g, '')));
$('heal-btn').addEventListener('click', () => send('heal'));
$('load-toggle').addEventListener('click', () => send($('load-toggle').dataset.on === 'true' ? 'load off' : 'load ' + $('load-rate').value + '/s'));
$('check-btn').addEventListener('click', async () => { $('check-result').textContent = 'checking…'; const o = await send('check'); if (o.ok) showCheck(o); else $('check-result').textContent = o.error; });
async function exportFile(line, name) {
  const o = await send(line + ' ' + name);
  if (!o.ok) return;
  const a = document.createElement('a'); a.href = api('/api/export/' + name); a.textContent = name; a.target = '_blank';
  $('check-result').textContent = 'wrote '; $('check-result').appendChild(a);
  a.click();
}
$('export-json').addEventListener('click', () => exportFile('history', 'lab-history.json'));
$('export-html').addEventListener('click', () => exportFile('history', 'lab-history.html'));
$('export-timeline').addEventListener('click', () => exportFile('timeline', 'lab-timeline.json'));
$('op-btn').addEventListener('click', async () => {
  const op = $('op').value, k = quote($('key').value), v = quote($('val').value), nw = quote($('new').value), via = $('via').value;
  let line;
  if (op === 'put') line = 'put ' + k + ' ' + v + (via ? ' --via ' + via : '');
  else if (op === 'get') line = 'get ' + k + ' --mode ' + $('mode').value + (via ? ' --node ' + via : '');
  else line = 'cas ' + k + ' ' + v + ' ' + nw;
  $('op-result').textContent = line + ' …';
  const o = await send(line);
  $('op-result').textContent = line + ' → ' + (o.ok ? summarize(o) : 'error: ' + o.error + (o.outcome ? ' (outcome ' + o.outcome + ' after ' + o.latency_ms.toFixed(0) + 'ms)' : ''));
});
$('cmd-form').addEventListener('submit', async e => { e.preventDefault(); const line = $('cmd-input').value; if (line.trim()) { await send(line); } });

// ---- the stream -------------------------------------------------------------
const es = new EventSource(api('/api/events'));
es.onopen = () => { $('conn').textContent = 'live'; $('conn').className = 'ok'; };
es.onerror = () => { $('conn').textContent = 'reconnecting…'; $('conn').className = 'bad'; };
es.addEventListener('state', e => applyState(JSON.parse(e.data)));
es.addEventListener('status', e => applySnap(JSON.parse(e.data)));
es.addEventListener('load', e => applyLoad(JSON.parse(e.data)));
es.addEventListener('command', e => applyCommand(JSON.parse(e.data), false));
