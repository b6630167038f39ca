// The Folio console: a single page over the documented HTTP API.
//
// Rules this file keeps (docs/http.md, "Console"):
// - every value shown comes from the API and is put into the page with
//   textContent (el() below), never as HTML: a Subject of
//   <img src=x onerror=alert(1)> shows as those characters;
// - no inline script or style (the Content-Security-Policy forbids both);
// - the session lives in an HttpOnly cookie; changes carry X-Folio-CSRF;
// - the page sees and does only what the API lets the signed-in user.
'use strict';

(function () {
  const HISTORY_MS = 3600 * 1000;
  const REFRESH_MS = 2000;
  const PAGE = 50;

  const state = { user: null, admin: false, csrf: null, timer: null };
  const main = document.getElementById('main');

  // ---- DOM and API helpers -------------------------------------------------

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function show(...nodes) {
    main.replaceChildren(...nodes);
  }

  function failure(e) {
    return el('p', { class: 'error' }, e.message || String(e));
  }

  async function api(method, path, body) {
    const headers = { 'X-Folio-Console': '1' };
    if (method !== 'GET' && state.csrf) headers['X-Folio-CSRF'] = state.csrf;
    const opts = { method, headers, credentials: 'same-origin' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    let data = null;
    try { data = await r.json(); } catch (_) { data = null; }
    if (!r.ok) {
      const err = new Error((data && data.reason) || (r.status + ' ' + r.statusText));
      err.status = r.status;
      if (r.status === 401 && path !== '/_session') signedOut();
      throw err;
    }
    return data;
  }

  const enc = encodeURIComponent;

  // ---- formatting ------------------------------------------------------------

  function fmtNumber(v) {
    if (v === null || v === undefined || !isFinite(v)) return '–';
    const a = Math.abs(v);
    if (a !== 0 && (a < 0.01 || a >= 1e6)) return v.toExponential(2);
    return (Math.round(v * 100) / 100).toLocaleString('en');
  }

  // An axis label: short (1.2k, 10M, 0.001).
  function fmtAxis(v) {
    if (v === 0) return '0';
    if (Math.abs(v) >= 1000) {
      return new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 }).format(v);
    }
    return String(Number(v.toPrecision(3)));
  }

  function fmtBytes(v) {
    if (v === null || v === undefined || !isFinite(v)) return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (Math.round(v * 10) / 10) + ' ' + units[i];
  }

  // ---- sign-in -----------------------------------------------------------------

  function signedOut() {
    state.user = null;
    state.csrf = null;
    stopTimer();
    document.getElementById('nav').hidden = true;
    document.getElementById('signout').hidden = true;
    document.getElementById('who').textContent = '';
    signInPage();
  }

  function signedIn(info) {
    state.user = info.user;
    state.admin = !!info.admin;
    state.csrf = info.csrf || null;
    document.getElementById('nav').hidden = false;
    document.getElementById('signout').hidden = false;
    document.getElementById('who').textContent =
      (info.user || 'administrator') + (info.admin ? ' (administrator)' : '');
    route();
  }

  function signInPage(message) {
    const user = el('input', { name: 'user', id: 'user', autocomplete: 'username', required: '' });
    const password = el('input', {
      name: 'password', id: 'password', type: 'password',
      autocomplete: 'current-password', required: '',
    });
    const status = el('p', { class: 'muted' }, message || '');
    const form = el('form', { class: 'signin', id: 'signin' },
      el('h1', {}, 'Sign in'),
      el('label', {}, 'User name', user),
      el('label', {}, 'Password', password),
      el('button', { type: 'submit', id: 'signin-button' }, 'Sign in'),
      status);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      status.textContent = 'Signing in…';
      try {
        const info = await api('POST', '/_session?cookie=true',
          { user: user.value, password: password.value });
        password.value = '';
        if (!location.hash || location.hash === '#/') location.hash = '#/dashboard';
        signedIn(info);
      } catch (e) {
        status.replaceChildren(failure(e));
      }
    });
    show(form);
    user.focus();
  }

  document.getElementById('signout').addEventListener('click', async () => {
    try { await api('DELETE', '/_session'); } catch (_) { /* signed out anyway */ }
    signedOut();
  });

  // ---- routing -------------------------------------------------------------------

  function stopTimer() {
    if (state.timer) clearInterval(state.timer);
    state.timer = null;
  }

  function route() {
    if (!state.user && !state.admin) return signInPage();
    stopTimer();
    const parts = (location.hash || '#/dashboard').slice(2).split('/');
    for (const a of document.querySelectorAll('#nav a')) a.classList.remove('active');
    if (parts[0] === 'databases' || parts[0] === 'db') {
      document.getElementById('nav-databases').classList.add('active');
    } else {
      document.getElementById('nav-dashboard').classList.add('active');
    }
    if (parts[0] === 'databases') return databasesPage();
    if (parts[0] === 'db' && parts.length === 2) return databasePage(decodeURIComponent(parts[1]));
    if (parts[0] === 'db' && parts[2] === 'doc') {
      return documentPage(decodeURIComponent(parts[1]), parts[3]);
    }
    return dashboardPage();
  }

  window.addEventListener('hashchange', () => { if (state.user || state.admin) route(); });

  // ---- dashboard -------------------------------------------------------------------

  // Each chart: a title, the unit of its y axis, and its series (a key of
  // the history's columns, or a function of one sample index). `log`: a
  // log scale when the values span more than two decades; `max`: a fixed
  // top of the axis (percentages).
  const CHARTS = [
    { title: 'Transactions', unit: 'per minute', log: true,
      series: [['transactions/min', 'trans_per_min']] },
    { title: 'Response time', unit: 'ms', log: true, op: true, series: [] },
    { title: 'Log writes', unit: 'bytes/s', log: true, bytes: true,
      series: [['written', 'log_bytes_per_s']] },
    { title: 'Log fsyncs and commits', unit: 'per second', log: true,
      series: [['fsyncs/s', 'log_fsyncs_per_s'], ['commits/s', 'log_commits_per_s']] },
    { title: 'Checkpoint age', unit: 'seconds', series: [['age', 'checkpoint_age_s']] },
    { title: 'Log space used', unit: '% of capacity', state: 'log_state', max: 100,
      series: [['used', (h, i) => pct(h.log_capacity_used[i])]] },
    { title: 'Buffer pool hit rate', unit: '% of lookups', max: 100,
      series: [['hit rate', (h, i) => pct(h.pool_hit_rate[i])]] },
    { title: 'Dirty pages', unit: 'pages', series: [['dirty', 'pool_dirty_pages']] },
    { title: 'Open databases and descriptors', unit: 'count', log: true,
      series: [['databases open', 'db_open'], ['open limit', 'db_open_limit'],
        ['descriptors', 'descriptors_open']] },
    { title: 'Connections', unit: 'connections',
      series: [['native', 'connections_native'], ['HTTP', 'connections_http']] },
    { title: 'Router queue', unit: 'messages',
      series: [['queue depth', 'router_queue_depth'], ['retrying', 'router_retrying']] },
    { title: 'Delivery latency', unit: 'ms',
      series: [['p50', 'router_latency_p50_ms'], ['p99', 'router_latency_p99_ms']] },
    { title: 'Replication', unit: 'runs since start',
      series: [['runs', 'replication_runs'], ['failures', 'replication_failures']] },
    { title: 'Lock waits', unit: 'per second', log: true, series: [['waits/s', 'lock_waits_per_s']] },
  ];

  function pct(v) { return v === null || v === undefined ? null : v * 100; }

  function dashboardPage() {
    const windowSel = el('select', { id: 'window' },
      el('option', { value: '5' }, 'last 5 minutes'),
      el('option', { value: '15' }, 'last 15 minutes'),
      el('option', { value: '60' }, 'last hour'));
    windowSel.value = '15';
    const opSel = el('select', { id: 'op' });
    const status = el('span', { class: 'muted', id: 'dash-status' }, 'Loading history…');
    const grid = el('div', { class: 'grid' });
    const cards = CHARTS.map((c) => {
      const canvas = el('canvas', { 'aria-label': c.title });
      const legend = el('div', { class: 'legend' });
      const head = el('h3', {}, c.title + ' (' + c.unit + ')');
      const card = el('div', { class: 'card' }, head, c.op ? el('div', { class: 'toolbar' }, 'Operation ', opSel) : null, canvas, legend);
      grid.append(card);
      return { c, canvas, legend };
    });
    show(el('h1', {}, 'Dashboard'),
      el('div', { class: 'toolbar' }, 'Show ', windowSel, status), grid);

    let h = null;
    const redraw = () => {
      if (!h) return;
      const minutes = Number(windowSel.value);
      const ops = Object.keys(h.ops || {});
      const chosen = opSel.value;
      if (opSel.options.length !== ops.length) {
        opSel.replaceChildren(...ops.map((o) => el('option', { value: o }, o)));
      }
      // Until someone picks one, the operation with most requests lately.
      const recent = (o) => sum(h.ops[o].count.slice(-minutes * 60));
      const busiest = ops.slice().sort((a, b) => recent(b) - recent(a))[0];
      opSel.value = opPicked && ops.includes(chosen) ? chosen : (busiest || '');
      for (const card of cards) drawCard(card, h, minutes, opSel.value);
    };
    let opPicked = false;
    windowSel.addEventListener('change', redraw);
    opSel.addEventListener('change', () => { opPicked = true; redraw(); });
    window.addEventListener('resize', redraw);

    const load = async () => {
      try {
        const since = h && h.t.length ? h.t[h.t.length - 1] : 0;
        const more = await api('GET', '/_stats/history?since=' + since);
        h = h ? append(h, more) : more;
        status.textContent = h.t.length
          ? 'Updated ' + new Date(h.t[h.t.length - 1]).toLocaleTimeString() +
            ' · one sample a second, the last hour kept by the server'
          : 'Waiting for the first samples…';
        redraw();
      } catch (e) {
        stopTimer();
        status.replaceChildren(failure(e.status === 403
          ? new Error('The dashboard reads GET /_stats/history, which is for administrators ' +
              'and the users named in http_metrics_users. ' + e.message)
          : e));
      }
    };
    load();
    state.timer = setInterval(load, REFRESH_MS);
  }

  function sum(a) { return a.reduce((s, v) => s + (v || 0), 0); }

  // Appends newer samples, keeping an hour. An operation missing from
  // one side had no requests there: its columns are filled with gaps.
  function append(h, more) {
    const n = more.t.length;
    if (n === 0) return h;
    const before = h.t.length;
    for (const [k, v] of Object.entries(more)) {
      if (Array.isArray(v)) h[k] = (h[k] || []).concat(v);
    }
    const idle = (len) => ({
      count: new Array(len).fill(0), p50_ms: new Array(len).fill(null),
      p95_ms: new Array(len).fill(null), p99_ms: new Array(len).fill(null),
    });
    const ops = {};
    const names = new Set([...Object.keys(h.ops || {}), ...Object.keys(more.ops || {})]);
    for (const name of names) {
      const old = (h.ops || {})[name] || idle(before);
      const fresh = (more.ops || {})[name] || idle(n);
      ops[name] = {};
      for (const k of ['count', 'p50_ms', 'p95_ms', 'p99_ms']) ops[name][k] = old[k].concat(fresh[k]);
    }
    h.ops = ops;
    const cut = h.t.findIndex((t) => t > h.t[h.t.length - 1] - HISTORY_MS);
    if (cut > 0) {
      for (const [k, v] of Object.entries(h)) if (Array.isArray(v)) h[k] = v.slice(cut);
      for (const o of Object.values(h.ops)) for (const k of Object.keys(o)) o[k] = o[k].slice(cut);
    }
    return h;
  }

  function seriesOf(card, h, op) {
    if (card.c.op) {
      const o = h.ops && h.ops[op];
      if (!o) return [];
      return [['p50', o.p50_ms], ['p95', o.p95_ms], ['p99', o.p99_ms]];
    }
    return card.c.series.map(([name, key]) => [name,
      typeof key === 'function' ? h.t.map((_, i) => key(h, i)) : (h[key] || [])]);
  }

  function drawCard(card, h, minutes, op) {
    const series = seriesOf(card, h, op);
    const t1 = h.t.length ? h.t[h.t.length - 1] : Date.now();
    // The window chosen, or less while the server has less history (a
    // minute at least), so a young server's samples are not squeezed
    // into the right edge.
    const first = h.t.length ? h.t[0] : t1;
    const t0 = Math.max(t1 - minutes * 60 * 1000, Math.min(first, t1 - 60 * 1000));
    const format = card.c.bytes ? (v) => fmtBytes(v) + '/s' : fmtNumber;
    const axis = card.c.bytes ? format : fmtAxis;
    const log = drawChart(card.canvas, h.t, series, t0, t1, card.c, axis);
    const items = series.map(([name, values], i) => {
      const last = values.length ? values[values.length - 1] : null;
      return el('span', {}, el('span', { class: 'swatch c' + i }), name + ': ' + format(last));
    });
    if (card.c.state) {
      const s = h[card.c.state];
      const now = s && s.length ? s[s.length - 1] : 'unknown';
      items.push(el('span', { class: now === 'ok' ? 'state-ok' : 'state-bad' }, 'log state: ' + now));
    }
    if (log) items.push(el('span', { class: 'muted' }, 'log scale'));
    if (card.c.op && !series.length) items.push(el('span', { class: 'muted' }, 'no requests yet'));
    card.legend.replaceChildren(...items);
  }

  const COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728'];

  // Draws series over [t0, t1] with labelled axes; a log scale (for charts
  // that allow one) when the values span more than two decades, showing at
  // most four. Returns whether it used one.
  function drawChart(canvas, times, series, t0, t1, chart, format) {
    const unit = chart.unit;
    const ratio = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 400;
    const hgt = canvas.clientHeight || 200;
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(hgt * ratio);
    const g = canvas.getContext('2d');
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, w, hgt);
    const left = 80, right = 8, top = 8, bottom = 34;
    const pw = w - left - right, ph = hgt - top - bottom;
    const visible = [];
    for (const [, values] of series) {
      for (let i = 0; i < times.length; i++) {
        if (times[i] >= t0 && values[i] !== null && values[i] !== undefined) visible.push(values[i]);
      }
    }
    const max = visible.length ? Math.max(...visible) : 1;
    const positive = visible.filter((v) => v > 0);
    const minPos = Math.max(positive.length ? Math.min(...positive) : 1, max / 1e4);
    const log = !!chart.log && positive.length > 1 && max / minPos > 100;
    let lo, hi, ticks;
    if (log) {
      lo = Math.pow(10, Math.floor(Math.log10(minPos)));
      hi = Math.pow(10, Math.ceil(Math.log10(max)));
      if (hi === lo) hi = lo * 10;
      ticks = [];
      for (let v = lo; v <= hi * 1.0001; v *= 10) ticks.push(v);
    } else {
      lo = 0;
      hi = chart.max || niceCeil(max > 0 ? max * 1.1 : 1);
      ticks = [0, hi / 4, hi / 2, (3 * hi) / 4, hi];
    }
    const y = (v) => {
      if (log) {
        const c = Math.max(v, lo);
        return top + ph - (Math.log10(c / lo) / Math.log10(hi / lo)) * ph;
      }
      return top + ph - ((v - lo) / (hi - lo)) * ph;
    };
    const x = (t) => left + ((t - t0) / (t1 - t0)) * pw;
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = '#556';
    g.strokeStyle = '#e3e5ea';
    g.lineWidth = 1;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (const v of ticks) {
      const yy = Math.round(y(v)) + 0.5;
      g.beginPath(); g.moveTo(left, yy); g.lineTo(left + pw, yy); g.stroke();
      g.fillText(format(v), left - 4, yy);
    }
    g.textAlign = 'center';
    g.textBaseline = 'top';
    const span = t1 - t0;
    const step = span <= 2 * 60000 ? 15000 : span <= 5 * 60000 ? 60000
      : span <= 15 * 60000 ? 3 * 60000 : 10 * 60000;
    const two = (n) => String(n).padStart(2, '0');
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const xx = Math.round(x(t)) + 0.5;
      g.beginPath(); g.moveTo(xx, top); g.lineTo(xx, top + ph); g.stroke();
      const d = new Date(t);
      const label = two(d.getHours()) + ':' + two(d.getMinutes()) +
        (step < 60000 ? ':' + two(d.getSeconds()) : '');
      g.fillText(label, xx, top + ph + 3);
    }
    g.fillText('time (local)', left + pw / 2, top + ph + 18);
    g.save();
    g.translate(9, top + ph / 2);
    g.rotate(-Math.PI / 2);
    g.textBaseline = 'middle';
    g.fillText(unit + (log ? ' (log)' : ''), 0, 0);
    g.restore();
    g.strokeStyle = '#8895b0';
    g.strokeRect(left + 0.5, top + 0.5, pw, ph);
    series.forEach(([, values], s) => {
      g.strokeStyle = COLOURS[s % COLOURS.length];
      g.lineWidth = 1.5;
      g.beginPath();
      let pen = false;
      for (let i = 0; i < times.length; i++) {
        const v = values[i];
        if (times[i] < t0 || v === null || v === undefined || (log && v <= 0)) { pen = false; continue; }
        const xx = x(times[i]), yy = y(v);
        if (pen) g.lineTo(xx, yy); else g.moveTo(xx, yy);
        pen = true;
      }
      g.stroke();
    });
    return log;
  }

  function niceCeil(v) {
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  // ---- databases ---------------------------------------------------------------------

  async function databasesPage() {
    const filter = el('input', { id: 'folder', placeholder: 'folder, e.g. mail/' });
    const body = el('tbody');
    const pager = el('div', { class: 'toolbar' });
    const table = el('table', { id: 'databases' },
      el('thead', {}, el('tr', {},
        el('th', {}, 'Path'), el('th', {}, 'Title'),
        el('th', { class: 'num' }, 'Notes (with ACL and design)'), el('th', { class: 'num' }, 'File size'),
        el('th', { class: 'num' }, 'Attachments (logical / stored)'))),
      body);
    show(el('h1', {}, 'Databases'),
      el('div', { class: 'toolbar' }, 'Folder ', filter,
        el('span', { class: 'muted' }, 'Only the databases your access lets you see are listed.')),
      table, pager);
    let list = [];
    let page = 0;
    const render = () => {
      const rows = list.slice(page * PAGE, (page + 1) * PAGE);
      body.replaceChildren(...rows.map((d) => {
        const docs = el('td', { class: 'num' }, '…');
        const size = el('td', { class: 'num' }, '…');
        const att = el('td', { class: 'num' }, '…');
        api('GET', '/db/' + enc(d.path)).then((info) => {
          docs.textContent = fmtNumber(info.note_count);
          size.textContent = fmtBytes(info.file_size);
          att.textContent = fmtBytes(info.attachment_logical_bytes) + ' / ' +
            fmtBytes(info.attachment_stored_bytes);
        }, (e) => { docs.textContent = e.message; size.textContent = ''; att.textContent = ''; });
        return el('tr', {},
          el('td', {}, el('a', { href: '#/db/' + enc(d.path) }, d.path)),
          el('td', {}, d.title), docs, size, att);
      }));
      const pages = Math.max(1, Math.ceil(list.length / PAGE));
      const prev = el('button', { type: 'button' }, '‹ Previous');
      const next = el('button', { type: 'button' }, 'Next ›');
      prev.disabled = page === 0;
      next.disabled = page + 1 >= pages;
      prev.addEventListener('click', () => { page--; render(); });
      next.addEventListener('click', () => { page++; render(); });
      pager.replaceChildren(prev, next,
        el('span', { class: 'muted' }, list.length + ' databases · page ' + (page + 1) + ' of ' + pages));
    };
    const load = async () => {
      try {
        const q = filter.value ? '?folder=' + enc(filter.value) : '';
        list = await api('GET', '/dbs' + q);
        page = 0;
        render();
      } catch (e) {
        body.replaceChildren(el('tr', {}, el('td', { colspan: '5' }, failure(e))));
      }
    };
    filter.addEventListener('change', load);
    load();
  }

  async function databasePage(path) {
    const facts = el('dl', { class: 'facts' });
    const body = el('tbody');
    const pager = el('div', { class: 'toolbar' });
    show(el('p', {}, el('a', { href: '#/databases' }, '‹ Databases')),
      el('h1', {}, path), facts,
      el('h2', {}, 'Documents, in the order they last changed'),
      el('table', { id: 'documents' },
        el('thead', {}, el('tr', {},
          el('th', {}, 'UNID'), el('th', {}, 'Subject or first text item'),
          el('th', { class: 'num' }, 'Sequence'), el('th', { class: 'num' }, 'Change'))),
        body),
      pager);
    try {
      const info = await api('GET', '/db/' + enc(path));
      const rows = [
        ['Title', info.title], ['Notes (documents, ACL, design)', fmtNumber(info.note_count)],
        ['File size', fmtBytes(info.file_size)], ['Replica id', info.replica_id],
        ['Instance id', info.instance_id], ['Created', info.created],
        ['Change sequence', info.sequence], ['Needs fixup', info.needs_fixup ? 'yes' : 'no'],
      ];
      facts.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
    } catch (e) {
      facts.replaceChildren(failure(e));
      return;
    }
    const starts = [0];
    const load = async (since) => {
      try {
        const r = await api('GET', '/db/' + enc(path) + '/docs?since=' + since + '&limit=' + PAGE);
        body.replaceChildren(...r.docs.map((d) => el('tr', {},
          el('td', {}, d.$deleted ? el('span', { class: 'muted' }, d.$unid + ' (deleted)')
            : el('a', { href: '#/db/' + enc(path) + '/doc/' + enc(d.$unid) }, d.$unid)),
          el('td', {}, headline(d)),
          el('td', { class: 'num' }, d.$seq), el('td', { class: 'num' }, d.$changeseq))));
        if (!r.docs.length) body.replaceChildren(el('tr', {}, el('td', { colspan: '4', class: 'muted' }, 'No documents here.')));
        const prev = el('button', { type: 'button' }, '‹ Previous');
        const next = el('button', { type: 'button' }, 'Next ›');
        prev.disabled = starts.length < 2;
        next.disabled = !r.more;
        prev.addEventListener('click', () => { starts.pop(); load(starts[starts.length - 1]); });
        next.addEventListener('click', () => { starts.push(r.next); load(r.next); });
        pager.replaceChildren(prev, next, el('span', { class: 'muted' }, 'changes after ' + since));
      } catch (e) {
        body.replaceChildren(el('tr', {}, el('td', { colspan: '4' }, failure(e))));
      }
    };
    load(0);
  }

  function headline(doc) {
    if (typeof doc.Subject === 'string') return doc.Subject;
    for (const [k, v] of Object.entries(doc)) {
      if (!k.startsWith('$') && typeof v === 'string') return k + ': ' + v;
    }
    return '';
  }

  function itemType(v) {
    if (typeof v === 'string') return 'text';
    if (typeof v === 'number') return 'number';
    if (Array.isArray(v)) {
      if (v.every((x) => typeof x === 'string')) return 'text list';
      if (v.every((x) => typeof x === 'number')) return 'number list';
      if (v.length && v[0] && v[0].$type) return v[0].$type + ' list';
      return 'list';
    }
    if (v && typeof v === 'object' && v.$type) return v.$type;
    return typeof v;
  }

  function itemValue(v) {
    if (typeof v === 'string' || typeof v === 'number') return String(v);
    if (Array.isArray(v) && v.every((x) => typeof x !== 'object')) return v.join('\n');
    return JSON.stringify(v, null, 2);
  }

  async function documentPage(path, unid) {
    const body = el('tbody');
    const system = el('dl', { class: 'facts' });
    show(el('p', {}, el('a', { href: '#/db/' + enc(path) }, '‹ ' + path)),
      el('h1', {}, 'Document ' + decodeURIComponent(unid)),
      system,
      el('h2', {}, 'Items'),
      el('table', { id: 'items' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Name'), el('th', {}, 'Type'), el('th', {}, 'Value'))),
        body));
    try {
      const doc = await api('GET', '/db/' + enc(path) + '/docs/' + unid);
      const entries = Object.entries(doc);
      system.replaceChildren(...entries.filter(([k]) => k.startsWith('$'))
        .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, itemValue(v))]));
      body.replaceChildren(...entries.filter(([k]) => !k.startsWith('$')).map(([k, v]) =>
        el('tr', {}, el('td', {}, k), el('td', {}, itemType(v)), el('td', { class: 'value' }, itemValue(v)))));
    } catch (e) {
      system.replaceChildren(failure(e));
    }
  }

  // ---- start ---------------------------------------------------------------------------

  api('GET', '/_session').then(signedIn, () => signedOut());
})();
