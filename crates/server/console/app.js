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

  const state = { user: null, admin: false, csrf: null, timer: null, flash: null };
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

  // Replaces the page's content (nodes left out as null are skipped).
  function show(...nodes) {
    main.replaceChildren(...nodes.filter((n) => n !== null && n !== undefined));
  }

  function failure(e) {
    return el('p', { class: 'error' }, e.message || String(e));
  }

  // Calls the API with the session cookie; every change carries the
  // session's CSRF token. `raw`: a File or Blob sent as the body as it is
  // (an attachment), with its own type.
  async function api(method, path, body, raw) {
    const headers = { 'X-Folio-Console': '1' };
    if (method !== 'GET' && state.csrf) headers['X-Folio-CSRF'] = state.csrf;
    const opts = { method, headers, credentials: 'same-origin' };
    if (raw !== undefined) {
      headers['Content-Type'] = raw.type || 'application/octet-stream';
      opts.body = raw;
    } else if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    let r;
    try {
      r = await fetch(path, opts);
    } catch (e) {
      // No answer at all: the server stopped (or was killed) mid-request.
      throw new Error('the server did not answer (' + e.message + '): it may have stopped; ' +
        'whether the operation was done is unknown until it is back');
    }
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

  // ---- formatting: the one place a figure becomes text ---------------------------
  //
  // fmt(v, unit[, short]): `unit` says what v measures, and the text is in
  // the unit a person reads at a glance, never an exponent (1.29e-4):
  //   'count'    a number of things or a rate: 1,234 · 12.5 · 0.25 · < 0.001
  //   's', 'ms'  a duration given in that unit: 129 µs · 4.2 ms · 3.1 s ·
  //              17 min · 3 h 5 min · 2 d 4 h
  //   'B'        a size, binary units: 776.4 KiB · 1.5 MiB
  //   'B/s'      a rate of bytes, decimal units (kB = 1,000 B): a log axis's
  //              ticks are powers of ten, which binary units would spell
  //              976.6 KiB
  //   '%'        a percentage (0–100): 99.5% · < 0.01%
  //   'date'     a moment (milliseconds since 1970, or RFC 3339 text), local
  //              and unambiguous: 2026-11-29 02:49:36
  //   'when'     the same with its age: 2026-11-29 02:49:36 (3 min ago)
  // A missing figure is '–'. `short`: an axis tick (1.2K, 0.001).
  function fmt(v, unit, short) {
    if (unit === 'date' || unit === 'when') return fmtMoment(v, unit === 'when');
    if (v === null || v === undefined || v === '' || !isFinite(v)) return '–';
    v = Number(v);
    switch (unit) {
      case 's': return fmtSeconds(v, 's');
      case 'ms': return fmtSeconds(v / 1000, 'ms');
      case 'B': return fmtScaled(v, 1024, ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], (x) => digits(x, 1));
      case 'B/s': return fmtScaled(v, 1000, ['B/s', 'kB/s', 'MB/s', 'GB/s', 'TB/s'], sig);
      case '%': return v !== 0 && Math.abs(v) < 0.01 ? '< 0.01%' : digits(v, 2) + '%';
      default: return fmtCount(v, short);
    }
  }

  // `v` with at most `fraction` decimals and thousands separators.
  function digits(v, fraction) {
    return v.toLocaleString('en', { maximumFractionDigits: fraction });
  }

  // `v` to three significant digits, with separators.
  function sig(v) {
    return v.toLocaleString('en', { maximumSignificantDigits: 3 });
  }

  function fmtCount(v, short) {
    const a = Math.abs(v);
    if (short && a >= 1000) {
      return new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 }).format(v);
    }
    if (a === 0 || a >= 100) return digits(v, 0);
    if (a >= 1) return digits(v, 2);
    // An axis tick is a power of ten no smaller than the chart's largest
    // value over 10,000: its digits read well. A value that small is
    // next to nothing.
    if (a >= 0.001 || short) return sig(v);
    return v > 0 ? '< 0.001' : '> -0.001';
  }

  // A duration of `s` seconds (asked for in `unit`, which a zero keeps).
  function fmtSeconds(s, unit) {
    if (s === 0) return '0 ' + unit;
    const sign = s < 0 ? '-' : '';
    const a = Number(Math.abs(s).toPrecision(3));
    if (a < 1e-6) return sign + '< 1 µs';
    if (a < 1e-3) return sign + sig(a * 1e6) + ' µs';
    if (a < 1) return sign + sig(a * 1e3) + ' ms';
    if (a < 120) return sign + sig(a) + ' s';
    const whole = Math.round(Math.abs(s));
    if (whole < 7200) return sign + Math.round(whole / 60) + ' min';
    if (whole < 48 * 3600) {
      return sign + Math.floor(whole / 3600) + ' h ' + Math.floor((whole % 3600) / 60) + ' min';
    }
    return sign + Math.floor(whole / 86400) + ' d ' + Math.floor((whole % 86400) / 3600) + ' h';
  }

  // `v` in the largest of `units` (each `base` times the one before) it
  // makes at least 1 of, written by `write`.
  function fmtScaled(v, base, units, write) {
    let i = 0;
    while (Math.abs(v) >= base && i < units.length - 1) { v /= base; i++; }
    return (i === 0 ? digits(v, Math.abs(v) < 1 ? 2 : 0) : write(v)) + ' ' + units[i];
  }

  // A moment as local date and time (text that is no moment, such as
  // "never", is shown as it is); with `age`, how long ago (or how soon).
  function fmtMoment(t, age) {
    if (t === null || t === undefined || t === '') return '–';
    const d = new Date(t);
    if (isNaN(d.getTime())) return String(t);
    const two = (n) => String(n).padStart(2, '0');
    const text = d.getFullYear() + '-' + two(d.getMonth() + 1) + '-' + two(d.getDate()) + ' ' +
      two(d.getHours()) + ':' + two(d.getMinutes()) + ':' + two(d.getSeconds());
    if (!age) return text;
    const secs = Math.round((Date.now() - d.getTime()) / 1000);
    if (Math.abs(secs) < 1) return text + ' (just now)';
    return text + (secs > 0 ? ' (' + fmtSeconds(secs, 's') + ' ago)' : ' (in ' + fmtSeconds(-secs, 's') + ')');
  }

  // Attachment bytes as referenced and as stored, and what deduplication
  // and compression saved.
  function storeFigures(logical, stored) {
    const saved = logical > 0 ? Math.round((1 - stored / logical) * 100) : null;
    return fmt(logical, 'B') + ' / ' + fmt(stored, 'B') +
      (saved === null ? '' : ' (' + saved + '% saved)');
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
    document.getElementById('nav-users').hidden = !state.admin;
    document.getElementById('nav-mail').hidden = !state.admin;
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
    const nav = parts[0] === 'db' ? 'databases' : parts[0];
    const link = document.getElementById('nav-' + nav) || document.getElementById('nav-dashboard');
    link.classList.add('active');
    const db = parts[0] === 'db' ? decodeURIComponent(parts[1] || '') : null;
    if (parts[0] === 'databases') return databasesPage();
    if (parts[0] === 'users') return usersPage();
    if (parts[0] === 'mail') return mailPage();
    if (parts[0] === 'replication') return replicationPage();
    if (db && parts.length === 2) return databasePage(db);
    if (db && parts[2] === 'acl') return aclPage(db);
    if (db && parts[2] === 'views') return viewsPage(db);
    if (db && parts[2] === 'view') return viewPage(db, parts[3], decodeURIComponent(parts[4] || ''));
    if (db && parts[2] === 'new') return editPage(db, null);
    if (db && parts[2] === 'doc' && parts[4] === 'edit') return editPage(db, decodeURIComponent(parts[3]));
    if (db && parts[2] === 'doc') return documentPage(db, decodeURIComponent(parts[3]));
    return dashboardPage();
  }

  window.addEventListener('hashchange', () => { if (state.user || state.admin) route(); });

  // ---- dashboard -------------------------------------------------------------------

  // Each chart: a title, what its y axis measures (`axis`, said beside
  // it, and in the title unless a duration), the unit its figures are formatted in (fmt();
  // 'count' when left out; a duration's or a size's ticks carry their own
  // unit), and its series (a key of the history's columns, or a function
  // of one sample index). `log`: a log scale when the values span more
  // than two decades; `max`: a fixed top of the axis (percentages);
  // `suffix`: what a count is of, after it in the legend.
  const CHARTS = [
    { title: 'Transactions', axis: 'per minute', log: true,
      series: [['transactions/min', 'trans_per_min']] },
    { title: 'Response time', axis: 'duration', unit: 'ms', log: true, op: true, series: [] },
    { title: 'Log writes', axis: 'bytes/s', unit: 'B/s', log: true,
      series: [['written', 'log_bytes_per_s']] },
    { title: 'Log fsyncs and commits', axis: 'per second', log: true,
      series: [['fsyncs/s', 'log_fsyncs_per_s'], ['commits/s', 'log_commits_per_s']] },
    { title: 'Checkpoint age', axis: 'age', unit: 's',
      series: [['age', 'checkpoint_age_s']] },
    { title: 'Log space used', axis: '% of capacity', unit: '%', state: 'log_state', max: 100,
      series: [['used', (h, i) => pct(h.log_capacity_used[i])]] },
    { title: 'Buffer pool hit rate', axis: '% of lookups', unit: '%', max: 100,
      series: [['hit rate', (h, i) => pct(h.pool_hit_rate[i])]] },
    { title: 'Dirty pages', axis: 'pages', suffix: ' pages', series: [['dirty', 'pool_dirty_pages']] },
    { title: 'Open databases and descriptors', axis: 'count', log: true,
      series: [['databases open', 'db_open'], ['open limit', 'db_open_limit'],
        ['descriptors', 'descriptors_open']] },
    { title: 'Connections', axis: 'connections', suffix: ' open',
      series: [['native', 'connections_native'], ['HTTP', 'connections_http']] },
    { title: 'Router queue', axis: 'messages', suffix: ' messages',
      series: [['queue depth', 'router_queue_depth'], ['retrying', 'router_retrying']] },
    { title: 'Delivery latency', axis: 'deposit to delivery', unit: 'ms',
      series: [['p50', 'router_latency_p50_ms'], ['p99', 'router_latency_p99_ms']] },
    { title: 'Replication', axis: 'runs since start',
      series: [['runs', 'replication_runs'], ['failures', 'replication_failures']] },
    { title: 'Lock waits', axis: 'per second', log: true, series: [['waits/s', 'lock_waits_per_s']] },
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
      // A duration's ticks carry their unit (µs to min): the title needs none.
      const timed = c.unit === 's' || c.unit === 'ms';
      const head = el('h3', {}, timed ? c.title : c.title + ' (' + c.axis + ')');
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
          ? 'Updated ' + fmt(h.t[h.t.length - 1], 'date') +
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
    const unit = card.c.unit || 'count';
    const format = (v) => fmt(v, unit) + (v === null || v === undefined ? '' : card.c.suffix || '');
    const axis = (v) => fmt(v, unit, true);
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
      // Steps that read well: 2.5 and 5 in fifths (0.5, 1), the rest
      // in quarters (0.25, 0.5).
      const m = Math.round(hi / Math.pow(10, Math.floor(Math.log10(hi))) * 10) / 10;
      const parts = m === 2.5 || m === 5 ? 5 : 4;
      ticks = Array.from({ length: parts + 1 }, (_, i) => (hi * i) / parts);
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
      // A label the canvas's edge would cut is left out (its line stays).
      const half = g.measureText(label).width / 2;
      if (xx - half >= 0 && xx + half <= w) g.fillText(label, xx, top + ph + 3);
    }
    g.fillText('time (local)', left + pw / 2, top + ph + 18);
    g.save();
    g.translate(9, top + ph / 2);
    g.rotate(-Math.PI / 2);
    g.textBaseline = 'middle';
    g.fillText(chart.axis + (log ? ' (log)' : ''), 0, 0);
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

  // ---- access ------------------------------------------------------------------------

  // The ACL levels from least to most (GET /db/{db}/_access names one).
  // They decide which buttons a page offers; the server decides what is
  // done, and a refusal is shown as it comes.
  const LEVELS = ['noaccess', 'depositor', 'reader', 'author', 'editor', 'designer', 'manager'];

  function atLeast(access, level) {
    return LEVELS.indexOf(access.level) >= LEVELS.indexOf(level);
  }

  async function accessTo(path) {
    try {
      return await api('GET', '/db/' + enc(path) + '/_access');
    } catch (_) {
      return { level: 'noaccess', roles: [] };
    }
  }

  // A message carried to the next page shown (after a save, a delete).
  function takeFlash() {
    const f = state.flash;
    state.flash = null;
    return f ? el('p', { class: 'notice', id: 'flash' }, f) : null;
  }

  function go(hash, flash) {
    state.flash = flash || null;
    if (location.hash === hash) route(); else location.hash = hash;
  }

  // An error answer as the page shows it: its status and the server's reason.
  function refusal(prefix, e) {
    const status = e.status ? ' (' + e.status + ')' : '';
    return el('p', { class: 'error', role: 'alert' }, prefix + status + ': ' + e.message);
  }

  // A confirmation shown in `host`: `message`, a button `label` that runs
  // `action`, and Cancel. With `typed`, the button stays disabled until
  // that text is typed (deleting a database names it twice).
  function confirmIn(host, message, label, action, typed) {
    const yes = el('button', { type: 'button', class: 'danger', id: 'confirm-yes' }, label);
    const no = el('button', { type: 'button', id: 'confirm-no' }, 'Cancel');
    const status = el('div');
    const parts = [el('p', {}, message)];
    if (typed) {
      const input = el('input', { id: 'confirm-text', autocomplete: 'off', 'aria-label': 'Type ' + typed + ' to confirm' });
      yes.disabled = true;
      input.addEventListener('input', () => { yes.disabled = input.value !== typed; });
      parts.push(el('p', {}, 'Type ', el('code', {}, typed), ' to confirm: ', input));
    }
    const box = el('div', { class: 'confirm', id: 'confirm' }, ...parts,
      el('div', { class: 'toolbar' }, yes, no), status);
    no.addEventListener('click', () => host.replaceChildren());
    yes.addEventListener('click', async () => {
      yes.disabled = true;
      try {
        await action();
      } catch (e) {
        status.replaceChildren(refusal('Refused', e));
        yes.disabled = false;
      }
    });
    host.replaceChildren(box);
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
        el('th', { class: 'num' }, 'Attachment store (logical / stored)'))),
      body);
    const create = state.admin ? newDatabaseForm() : null;
    show(el('h1', {}, 'Databases'), takeFlash(), create,
      el('div', { class: 'toolbar' }, 'Folder ', filter,
        el('span', { class: 'muted' }, 'Only the databases your access lets you see are listed.')),
      table, pager,
      el('p', { class: 'muted' }, 'Attachment store: the bytes of the attachments kept in the ' +
        'server\'s attachment store (each reference / each distinct content once, compressed; ' +
        'saved: what deduplication and compression spare). ' +
        'Note counts and attachment totals count every document, so only administrators ' +
        '(whom $Readers does not restrict) are shown them.'));
    let list = [];
    let page = 0;
    const render = () => {
      const rows = list.slice(page * PAGE, (page + 1) * PAGE);
      body.replaceChildren(...rows.map((d) => {
        const docs = el('td', { class: 'num' }, '…');
        const size = el('td', { class: 'num' }, '…');
        const att = el('td', { class: 'num' }, '…');
        api('GET', '/db/' + enc(d.path)).then((info) => {
          docs.textContent = info.note_count === null ? '–' : fmt(info.note_count);
          size.textContent = fmt(info.file_size, 'B');
          att.textContent = info.attachment_logical_bytes === null ? '–'
            : storeFigures(info.attachment_logical_bytes, info.attachment_stored_bytes);
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
        el('span', { class: 'muted' }, fmt(list.length) + (list.length === 1 ? ' database' : ' databases') +
          ' · page ' + (page + 1) + ' of ' + pages));
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

  // Administrators create databases (PUT /db/{db}); the creator becomes
  // its Manager.
  function newDatabaseForm() {
    const path = el('input', { id: 'new-db-path', placeholder: 'apps/crm.fdb', required: '' });
    const title = el('input', { id: 'new-db-title', placeholder: 'title (optional)' });
    const status = el('div');
    const form = el('form', { class: 'panel', id: 'new-db' },
      el('h2', {}, 'New database'),
      el('div', { class: 'toolbar' },
        el('label', {}, 'Path ', path), el('label', {}, 'Title ', title),
        el('button', { type: 'submit', id: 'new-db-create' }, 'Create')),
      status);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        const info = await api('PUT', '/db/' + enc(path.value.trim()),
          title.value ? { title: title.value } : undefined);
        go('#/db/' + enc(info.path), 'Created ' + info.path + '.');
      } catch (e) {
        status.replaceChildren(refusal('Not created', e));
      }
    });
    return form;
  }

  async function databasePage(path) {
    const facts = el('dl', { class: 'facts', id: 'facts' });
    const actions = el('div', { class: 'toolbar', id: 'db-actions' });
    const panel = el('div', { id: 'db-panel' });
    const chooser = el('select', { id: 'show-by' },
      el('option', { value: '' }, 'every document, by last change'));
    const listing = el('div', { id: 'listing' });
    const newDoc = el('span');
    show(el('p', {}, el('a', { href: '#/databases' }, '‹ Databases')),
      el('h1', {}, path), takeFlash(), facts, actions, panel,
      el('h2', {}, 'Documents'),
      el('div', { class: 'toolbar' }, 'Show ', chooser, newDoc),
      listing);
    let info, access;
    try {
      [info, access] = await Promise.all([api('GET', '/db/' + enc(path)), accessTo(path)]);
    } catch (e) {
      facts.replaceChildren(failure(e));
      return;
    }
    const hiddenCount = 'counted for administrators only';
    const rows = [
      ['Title', info.title],
      ['Notes (documents, ACL, design)', info.note_count === null ? hiddenCount : fmt(info.note_count)],
      ['File size', fmt(info.file_size, 'B')],
      ['Attachment store (logical / stored)', info.attachment_logical_bytes === null ? hiddenCount
        : storeFigures(info.attachment_logical_bytes, info.attachment_stored_bytes)],
      ['Replica id', info.replica_id], ['Instance id', info.instance_id], ['Created', fmt(info.created, 'date')],
      ['Change sequence', info.sequence],
      ['Needs fixup', info.needs_fixup
        ? 'yes: it refuses writes until fixed up (reads go on); ' + (state.admin
          ? 'Fixup… below repairs it while the server runs'
          : 'a server administrator can fix it up from this page') : 'no'],
      ['Your access', access.level + (access.roles && access.roles.length ? ' · roles ' + access.roles.join(', ') : '')],
    ];
    facts.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
    const manager = state.admin || atLeast(access, 'manager');
    actions.append(el('a', { href: '#/db/' + enc(path) + '/views', id: 'db-views', class: 'button' },
      'Views and folders'));
    if (manager) {
      actions.append(el('a', { href: '#/db/' + enc(path) + '/acl', id: 'db-acl', class: 'button' },
        'Access control'));
    }
    if (state.admin) actions.append(button('Copy…', 'db-copy', () => copyPanel(panel, path)));
    if (state.admin) actions.append(button('Fixup…', 'db-fixup', () => fixupPanel(panel, path)));
    if (manager) {
      actions.append(button('Compact…', 'db-compact', () => compactPanel(panel, path)));
      actions.append(button('Delete…', 'db-delete', () => confirmIn(panel,
        'Delete the database ' + path + '? Its file is removed for good, with every document, ' +
        'view and attachment in it.', 'Delete ' + path, async () => {
          await api('DELETE', '/db/' + enc(path));
          go('#/databases', 'Deleted ' + path + '.');
        }, path), 'danger'));
    }
    if (access.level === 'depositor' || atLeast(access, 'author')) {
      newDoc.replaceChildren(el('a', { href: '#/db/' + enc(path) + '/new', id: 'new-doc' }, 'New document'));
    }
    try {
      const views = await api('GET', '/db/' + enc(path) + '/views');
      for (const v of views) {
        chooser.append(el('option', { value: v.kind + ':' + v.name }, v.kind + ': ' + v.name));
      }
    } catch (e) {
      chooser.after(failure(e));
    }
    const pick = () => {
      const v = chooser.value;
      if (!v) return changesListing(listing, path);
      const i = v.indexOf(':');
      return viewListing(listing, path, v.slice(0, i), v.slice(i + 1));
    };
    chooser.addEventListener('change', pick);
    pick();
  }

  function button(label, id, onclick, cls) {
    const b = el('button', { type: 'button', id }, label);
    if (cls) b.className = cls;
    b.addEventListener('click', onclick);
    return b;
  }

  // POST /db/{db}/_copy?to=…[&replica=true] (administrators).
  function copyPanel(host, path) {
    const to = el('input', { id: 'copy-to', placeholder: 'new path, e.g. apps/crm-test.fdb' });
    const replica = el('input', { type: 'checkbox', id: 'copy-replica' });
    const status = el('div');
    const form = el('form', { class: 'panel', id: 'copy-form' },
      el('h2', {}, 'Copy ' + path),
      el('div', { class: 'toolbar' }, el('label', {}, 'To ', to),
        el('label', {}, replica, ' a replica (same replica id, filled by replication)'),
        el('button', { type: 'submit', id: 'copy-go' }, 'Copy')),
      status);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      status.replaceChildren(el('p', { class: 'muted' }, 'Copying…'));
      try {
        const q = '?to=' + enc(to.value.trim()) + (replica.checked ? '&replica=true' : '');
        const r = await api('POST', '/db/' + enc(path) + '/_copy' + q);
        go('#/db/' + enc(r.database.path), 'Copied ' + path + ' to ' + r.database.path + ': ' +
          fmt(r.documents) + ' documents, ' + fmt(r.views) + ' views and folders.');
      } catch (e) {
        status.replaceChildren(refusal('Not copied', e));
      }
    });
    host.replaceChildren(form);
  }

  // POST /db/{db}/compact (Manager or administrator).
  function compactPanel(host, path) {
    const dry = el('input', { type: 'checkbox', id: 'compact-dry' });
    const status = el('div', { id: 'compact-result' });
    const go1 = button('Compact now', 'compact-go', async () => {
      status.replaceChildren(el('p', { class: 'muted' }, 'Compacting…'));
      try {
        const r = await api('POST', '/db/' + enc(path) + '/compact', { dry_run: dry.checked });
        const facts = [
          ['Result', r.dry_run ? 'dry run: nothing written' : 'compacted'],
          ['File size', fmt(r.bytes_before, 'B') + ' → ' + fmt(r.bytes_after, 'B')],
          ['Pages', fmt(r.pages_before) + ' → ' + fmt(r.pages_after)],
          ['Free pages before', fmt(r.free_pages_before)],
          ['Pages moved', fmt(r.pages_moved)],
          ['Notes lost', fmt(r.notes_lost)],
        ];
        status.replaceChildren(el('dl', { class: 'facts' },
          ...facts.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])));
      } catch (e) {
        status.replaceChildren(refusal('Not compacted', e));
      }
    });
    host.replaceChildren(el('div', { class: 'panel' }, el('h2', {}, 'Compact ' + path),
      el('p', { class: 'muted' }, 'Gives free pages back to the file system; the database stays in use.'),
      el('div', { class: 'toolbar' }, el('label', {}, dry, ' dry run (report only)'), go1), status));
  }

  // The change listing: GET /db/{db}/docs?since=…&limit=50.
  function changesListing(host, path) {
    const body = el('tbody');
    const pager = el('div', { class: 'toolbar' });
    host.replaceChildren(el('table', { id: 'documents' },
      el('thead', {}, el('tr', {},
        el('th', {}, 'UNID'), el('th', {}, 'Subject or first text item'),
        el('th', { class: 'num' }, 'Sequence'), el('th', { class: 'num' }, 'Change'))),
      body), pager);
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
        pager.replaceChildren(prev, next, el('span', { class: 'muted' },
          'oldest change first · changes after ' + since));
      } catch (e) {
        body.replaceChildren(el('tr', {}, el('td', { colspan: '4' }, failure(e))));
      }
    };
    load(0);
  }

  // A view or folder, a page of entries at a time:
  // GET /db/{db}/views/{name}?start=…&count=50&total=true&categories=true.
  // A categorized view shows its category rows (what the server counts
  // under each: only the entries the caller may read); clicking one folds
  // its entries away or back, and Collapse all / Expand all fold them all.
  function viewListing(host, path, kind, name) {
    const table = el('table', { id: 'entries' });
    const pager = el('div', { class: 'toolbar' });
    const folding = el('div', { class: 'toolbar', id: 'folding' });
    host.replaceChildren(folding, table, pager);
    const starts = [0];
    const folded = new Set();
    let allFolded = false;
    const refold = () => {
      let hide = false;
      for (const tr of table.querySelectorAll('tbody tr')) {
        if (tr.classList.contains('category')) {
          const closed = allFolded !== folded.has(tr.dataset.category);
          tr.firstChild.firstChild.textContent = closed ? '▸' : '▾';
          hide = closed;
        } else {
          tr.hidden = hide;
        }
      }
    };
    const base = '/db/' + enc(path) + '/' + (kind === 'folder' ? 'folders' : 'views') + '/' + enc(name);
    const load = async (start) => {
      try {
        const r = await api('GET', base + '?start=' + start + '&count=' + PAGE + '&total=true&categories=true');
        const titles = r.titles.length ? r.titles : ['(no columns)'];
        const rows = r.rows.map((row) => {
          if ('category' in row) {
            const tr = el('tr', { class: 'category' },
              el('td', { colspan: String(titles.length + 1) }, el('span', { class: 'fold' }, '▾'),
                cell(row.category) + ' (' + fmt(row.count) + (row.count === 1 ? ' entry)' : ' entries)')));
            tr.dataset.category = cell(row.category);
            tr.addEventListener('click', () => {
              const c = tr.dataset.category;
              if (folded.has(c)) folded.delete(c); else folded.add(c);
              refold();
            });
            return tr;
          }
          return el('tr', {},
            el('td', { class: 'num' }, row.position + 1),
            ...titles.map((t, i) => {
              const v = cell(row.columns[t]);
              return el('td', {}, i === 0
                ? el('a', { href: '#/db/' + enc(path) + '/doc/' + enc(row.unid) }, v === '' ? row.unid : v)
                : v);
            }));
        });
        if (!rows.length) rows.push(el('tr', {}, el('td', { colspan: String(titles.length + 1), class: 'muted' }, 'No entries.')));
        table.replaceChildren(el('thead', {}, el('tr', {}, el('th', { class: 'num' }, '#'),
          ...titles.map((t) => el('th', {}, t)))), el('tbody', {}, ...rows));
        if (r.categorized) {
          folding.replaceChildren(
            button('Collapse all', 'collapse-all', () => { allFolded = true; folded.clear(); refold(); }),
            button('Expand all', 'expand-all', () => { allFolded = false; folded.clear(); refold(); }),
            el('span', { class: 'muted' }, 'click a category to fold or unfold it'));
        } else {
          folding.replaceChildren();
        }
        refold();
        const entries = r.rows.filter((row) => !('category' in row));
        const last = entries.length ? entries[entries.length - 1].position : start - 1;
        const prev = el('button', { type: 'button' }, '‹ Previous');
        const next = el('button', { type: 'button' }, 'Next ›');
        prev.disabled = starts.length < 2;
        next.disabled = last + 1 >= r.total;
        prev.addEventListener('click', () => { starts.pop(); load(starts[starts.length - 1]); });
        next.addEventListener('click', () => { starts.push(last + 1); load(last + 1); });
        const shown = entries.length ? (entries[0].position + 1) + '–' + (last + 1) : 'none';
        pager.replaceChildren(prev, next, el('span', { class: 'muted', id: 'entries-count' },
          kind + ' ' + name + ': entries ' + shown + ' of ' + fmt(r.total)));
      } catch (e) {
        table.replaceChildren(el('tbody', {}, el('tr', {}, el('td', {}, failure(e)))));
      }
    };
    load(0);
  }

  function cell(v) {
    if (v === null || v === undefined) return '';
    if (Array.isArray(v)) return v.join(', ');
    return String(v);
  }

  function headline(doc) {
    if (typeof doc.Subject === 'string') return doc.Subject;
    for (const [k, v] of Object.entries(doc)) {
      if (!k.startsWith('$') && typeof v === 'string') return k + ': ' + v;
    }
    return '';
  }

  // ---- documents -----------------------------------------------------------------------

  // The items a person edits: every item but the system fields, and the
  // access items $Readers and $Authors, which are items too.
  const ACCESS_ITEMS = ['$Readers', '$Authors'];

  function isItem(k) {
    return !k.startsWith('$') || ACCESS_ITEMS.includes(k);
  }

  // An item's type as the page names it, from its JSON form (docs/http.md,
  // "Documents").
  function itemType(v) {
    if (typeof v === 'string') return 'text';
    if (typeof v === 'number') return 'number';
    if (Array.isArray(v)) {
      if (v.every((x) => typeof x === 'string')) return 'text list';
      if (v.every((x) => typeof x === 'number')) return 'number list';
      return 'JSON';
    }
    if (v && typeof v === 'object') {
      const t = { text: 'text', number: 'number', richtext: 'rich text', datetime: 'date-time',
        'datetime-list': 'date-time list', 'text-list': 'text list', 'number-list': 'number list',
        attachment: 'attachment' }[v.$type];
      if (t) return t;
    }
    return 'JSON';
  }

  const TYPES = ['text', 'text list', 'number', 'number list', 'date-time', 'date-time list', 'rich text', 'JSON'];

  // An item's value as text to show or edit (lists one value a line).
  function itemValue(v) {
    if (typeof v === 'string' || typeof v === 'number') return String(v);
    if (Array.isArray(v) && v.every((x) => typeof x !== 'object')) return v.join('\n');
    if (v && typeof v === 'object' && 'v' in v && itemType(v) !== 'JSON') {
      return Array.isArray(v.v) ? v.v.join('\n') : String(v.v);
    }
    return JSON.stringify(v, null, 2);
  }

  // The JSON an item of `type` edited as `text` is sent as.
  function fromText(name, type, text) {
    const lines = () => (text === '' ? [] : text.split('\n'));
    const number = (s) => {
      const n = Number(s.trim());
      if (s.trim() === '' || !isFinite(n)) throw new Error(name + ': ' + JSON.stringify(s) + ' is not a number');
      return n;
    };
    switch (type) {
      case 'text': return text;
      case 'text list': return { $type: 'text-list', v: lines() };
      case 'number': return number(text);
      case 'number list': return { $type: 'number-list', v: lines().map(number) };
      case 'date-time': return { $type: 'datetime', v: text.trim() };
      case 'date-time list': return { $type: 'datetime-list', v: lines().map((s) => s.trim()) };
      case 'rich text': return { $type: 'richtext', v: text };
      default:
        try { return JSON.parse(text); } catch (e) { throw new Error(name + ': not JSON: ' + e.message); }
    }
  }

  function docUrl(path, unid) {
    return '/db/' + enc(path) + '/docs/' + enc(unid);
  }

  function attachmentUrl(path, unid, name) {
    return docUrl(path, unid) + '/attachments/' + enc(name);
  }

  // May `access` edit `doc`? Editors and above; an Author named in
  // $Authors. What the page offers only: the server decides.
  function mayEdit(access, doc) {
    if (state.admin || atLeast(access, 'editor')) return true;
    if (access.level !== 'author') return false;
    const authors = [].concat(doc.$Authors || []).map((a) => String(a).trim().toLowerCase());
    const me = (state.user || '').toLowerCase();
    return authors.includes(me) || authors.includes('*') ||
      (access.roles || []).some((r) => authors.includes('[' + r.toLowerCase() + ']'));
  }

  // A document's system fields that are moments.
  const MOMENTS = ['$created', '$modified', '$seqtime', '$added'];

  async function documentPage(path, unid) {
    const body = el('tbody');
    const system = el('dl', { class: 'facts', id: 'system' });
    const actions = el('div', { class: 'toolbar', id: 'doc-actions' });
    const panel = el('div', { id: 'doc-panel' });
    const files = el('div', { id: 'attachments' });
    show(el('p', {}, el('a', { href: '#/db/' + enc(path) }, '‹ ' + path)),
      el('h1', {}, 'Document ' + unid), takeFlash(), actions, panel,
      system,
      el('h2', {}, 'Items'),
      el('table', { id: 'items' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Name'), el('th', {}, 'Type'), el('th', {}, 'Value'))),
        body),
      el('h2', {}, 'Attachments'), files);
    let doc, access;
    try {
      [doc, access] = await Promise.all([api('GET', docUrl(path, unid)), accessTo(path)]);
    } catch (e) {
      system.replaceChildren(failure(e));
      return;
    }
    const entries = Object.entries(doc);
    // The document's times as moments with their age (the stored value,
    // to the microsecond and in UTC, on hover); the other fields as they are.
    const moment = (k) => MOMENTS.includes(k);
    system.replaceChildren(...entries.filter(([k]) => !isItem(k) && !k.startsWith('$FILE:'))
      .flatMap(([k, v]) => [el('dt', {}, k),
        el('dd', moment(k) ? { title: String(v) } : {}, moment(k) ? fmt(v, 'when') : itemValue(v))]));
    body.replaceChildren(...entries.filter(([k]) => isItem(k)).map(([k, v]) =>
      el('tr', {}, el('td', {}, k), el('td', {}, itemType(v)), el('td', { class: 'value' }, itemValue(v)))));
    const editable = mayEdit(access, doc);
    if (editable) {
      actions.append(el('a', { href: '#/db/' + enc(path) + '/doc/' + enc(unid) + '/edit', id: 'edit', class: 'button' }, 'Edit'));
      actions.append(button('Delete…', 'doc-delete', () => confirmIn(panel,
        'Delete document ' + unid + ' (sequence ' + doc.$seq + ')? A deletion stub stays for replication.',
        'Delete the document', async () => {
          await api('DELETE', docUrl(path, unid) + '?seq=' + doc.$seq);
          go('#/db/' + enc(path), 'Deleted document ' + unid + '.');
        }), 'danger'));
    }
    attachmentsList(files, path, unid, doc, editable);
  }

  function attachmentsList(host, path, unid, doc, editable) {
    const list = Object.entries(doc).filter(([k]) => k.startsWith('$FILE:')).map(([, a]) => a);
    const rows = list.map((a) => {
      const cells = [
        el('td', {}, a.name), el('td', {}, a.mime), el('td', { class: 'num' }, fmt(a.size, 'B')),
        el('td', {}, el('a', { href: attachmentUrl(path, unid, a.name), download: a.name, class: 'download' }, 'Download')),
      ];
      if (editable) {
        cells.push(el('td', {}, button('Remove', 'remove-' + a.name, async (ev) => {
          ev.target.disabled = true;
          try {
            await api('DELETE', attachmentUrl(path, unid, a.name) + '?seq=' + doc.$seq);
            go(location.hash, 'Removed the attachment ' + a.name + '.');
          } catch (e) {
            host.append(refusal('Not removed', e));
          }
        })));
      }
      return el('tr', {}, ...cells);
    });
    const table = el('table', { id: 'files' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Name'), el('th', {}, 'Type'), el('th', { class: 'num' }, 'Size'),
        el('th', {}, ''), editable ? el('th', {}, '') : null)),
      el('tbody', {}, ...(rows.length ? rows
        : [el('tr', {}, el('td', { colspan: editable ? '5' : '4', class: 'muted' }, 'None.'))])));
    host.replaceChildren(table);
    if (!editable) return;
    // PUT …/attachments/{name}, the file's bytes as the body.
    const file = el('input', { type: 'file', id: 'upload-file' });
    const status = el('div');
    const up = button('Upload', 'upload-go', async () => {
      const f = file.files[0];
      if (!f) return;
      status.replaceChildren(el('p', { class: 'muted' }, 'Uploading ' + f.name + '…'));
      try {
        await api('PUT', attachmentUrl(path, unid, f.name), undefined, f);
        go(location.hash, 'Stored the attachment ' + f.name + ' (' + fmt(f.size, 'B') + ').');
      } catch (e) {
        status.replaceChildren(refusal('Not stored', e));
      }
    });
    host.append(el('div', { class: 'toolbar' }, 'Add a file ', file, up), status);
  }

  // The editor, for a new document (unid null) or an existing one. An
  // update is based on the sequence number read ($seq): if the document
  // moved on since, the server answers 409 and changes nothing, and the
  // page says so and keeps what was typed.
  async function editPage(path, unid) {
    const status = el('div', { id: 'edit-status' });
    const rowsBody = el('tbody');
    const heading = unid ? 'Edit document ' + unid : 'New document in ' + path;
    const back = unid ? '#/db/' + enc(path) + '/doc/' + enc(unid) : '#/db/' + enc(path);
    const note = el('div');
    const save = el('button', { type: 'submit', id: 'save' }, 'Save');
    const add = button('Add item', 'add-item', () => rowsBody.append(itemRow(null, null)));
    const form = el('form', { id: 'editor' },
      el('table', { id: 'edit-items' }, el('thead', {}, el('tr', {},
        el('th', {}, 'Name'), el('th', {}, 'Type'), el('th', {}, 'Value (a list: one value a line)'),
        el('th', {}, 'Remove'))), rowsBody),
      el('div', { class: 'toolbar' }, add, save, el('a', { href: back }, 'Cancel')));
    show(el('p', {}, el('a', { href: back }, '‹ Back')), el('h1', {}, heading), note, status, form);
    let doc = {}, seq = null;
    let access;
    try {
      [doc, access] = await Promise.all([unid ? api('GET', docUrl(path, unid)) : {}, accessTo(path)]);
      seq = unid ? doc.$seq : null;
    } catch (e) {
      status.replaceChildren(failure(e));
      form.hidden = true;
      return;
    }
    const allowed = unid ? mayEdit(access, doc)
      : state.admin || access.level === 'depositor' || atLeast(access, 'author');
    if (!allowed) {
      note.replaceChildren(el('p', { class: 'warning', id: 'access-warning' },
        'Your access to ' + path + ' is ' + access.level + ', which does not let you ' +
        (unid ? 'edit this document' : 'create documents') + ': the server will refuse a save.'));
    }
    if (unid) note.append(el('p', { class: 'muted' }, 'Editing sequence ' + seq + ' of the document.'));
    const original = {};
    for (const [k, v] of Object.entries(doc)) {
      if (!isItem(k)) continue;
      original[k] = { type: itemType(v), text: itemValue(v) };
      rowsBody.append(itemRow(k, v));
    }
    if (!unid) rowsBody.append(itemRow(null, null));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      let changes;
      try {
        changes = collect(rowsBody, original);
      } catch (e) {
        status.replaceChildren(refusal('Not saved', e));
        return;
      }
      if (!Object.keys(changes).length) {
        status.replaceChildren(el('p', { class: 'muted' }, 'Nothing changed: nothing to save.'));
        return;
      }
      save.disabled = true;
      try {
        if (unid) {
          const r = await api('PUT', docUrl(path, unid), Object.assign({ $seq: seq }, changes));
          go(back, 'Saved: the document is at sequence ' + r.seq + '.');
        } else {
          const r = await api('POST', '/db/' + enc(path) + '/docs', changes);
          go('#/db/' + enc(path) + '/doc/' + enc(r.unid), 'Created document ' + r.unid + '.');
        }
      } catch (e) {
        save.disabled = false;
        if (e.status === 409) {
          const reload = button('Discard my changes and edit the current version', 'reload-current', () => route());
          status.replaceChildren(el('div', { class: 'error', role: 'alert', id: 'conflict' },
            el('p', {}, 'Not saved (409 save conflict): ' + e.message + '.'),
            el('p', {}, 'Someone saved this document after you opened it. Nothing was overwritten, ' +
              'and your changes are still in the form below: copy what you need, then edit the current version.'),
            reload));
        } else {
          status.replaceChildren(refusal('Not saved: the server refused', e));
        }
      }
    });
  }

  function itemRow(name, value) {
    const nameInput = el('input', { class: 'item-name', 'aria-label': 'item name' });
    if (name !== null) { nameInput.value = name; nameInput.readOnly = true; }
    const type = el('select', { class: 'item-type', 'aria-label': 'item type' },
      ...TYPES.map((t) => el('option', { value: t }, t)));
    type.value = name !== null ? itemType(value) : 'text';
    const text = el('textarea', { class: 'item-value', rows: '2', 'aria-label': 'item value' });
    text.value = name !== null ? itemValue(value) : '';
    const remove = el('input', { type: 'checkbox', class: 'item-remove', 'aria-label': 'remove item' });
    return el('tr', { class: 'item-row' }, el('td', {}, nameInput), el('td', {}, type), el('td', {}, text),
      el('td', {}, remove));
  }

  // The body of a save: the items changed, added or removed (null).
  function collect(rowsBody, original) {
    const out = {};
    for (const row of rowsBody.querySelectorAll('tr.item-row')) {
      const name = row.querySelector('.item-name').value.trim();
      const type = row.querySelector('.item-type').value;
      const text = row.querySelector('.item-value').value;
      const removed = row.querySelector('.item-remove').checked;
      if (!name) {
        if (text) throw new Error('an item with a value needs a name');
        continue;
      }
      if (name.startsWith('$') && !ACCESS_ITEMS.includes(name)) {
        throw new Error(name + ': names starting with $ are system fields (only $Readers and $Authors are items)');
      }
      const was = original[name];
      if (removed) {
        if (was) out[name] = null;
        continue;
      }
      if (was && was.type === type && was.text === text) continue;
      out[name] = fromText(name, type, text);
    }
    return out;
  }

  // ---- access control ------------------------------------------------------------------

  // The flags a level has when a list does not say (nsf::acl): create for
  // Depositor, Author and above; delete for Editor and above.
  function levelFlags(level) {
    const i = LEVELS.indexOf(level);
    return {
      create: level === 'depositor' || i >= LEVELS.indexOf('author'),
      delete: i >= LEVELS.indexOf('editor'),
    };
  }

  const LEVEL_NAMES = {
    manager: 'Manager', designer: 'Designer', editor: 'Editor', author: 'Author',
    reader: 'Reader', depositor: 'Depositor', noaccess: 'No Access',
  };

  function levelSelect(value, attrs) {
    const sel = el('select', attrs || {},
      ...LEVELS.slice().reverse().map((l) => el('option', { value: l }, LEVEL_NAMES[l])));
    sel.value = value || 'noaccess';
    return sel;
  }

  function splitList(text) {
    return text.split(',').map((x) => x.trim()).filter((x) => x !== '');
  }

  // GET/PUT /db/{db}/_acl (Manager access or an administrator). The whole
  // list is sent at once: the server checks it whole (levels, names,
  // roles, a Manager left) and stores it in one logged write, or refuses
  // it and keeps the list it had.
  async function aclPage(path) {
    const status = el('div', { id: 'acl-status' });
    const host = el('div', { id: 'acl' });
    show(el('p', {}, el('a', { href: '#/db/' + enc(path) }, '‹ ' + path)),
      el('h1', {}, 'Access control: ' + path), takeFlash(), status, host);
    let acl;
    try {
      acl = await api('GET', '/db/' + enc(path) + '/_acl');
    } catch (e) {
      status.replaceChildren(refusal('Not shown', e));
      return;
    }
    aclForm(host, status, path, acl);
  }

  function aclForm(host, status, path, acl) {
    const def = levelSelect(acl.default, { id: 'acl-default' });
    const anon = levelSelect(acl.anonymous, { id: 'acl-anonymous' });
    const roles = el('input', { id: 'acl-roles', size: '60', placeholder: 'Sales, Support' });
    roles.value = (acl.roles || []).join(', ');
    const body = el('tbody', { id: 'acl-entries' });
    for (const e of acl.entries || []) body.append(aclRow(e));
    const add = button('Add entry', 'acl-add', () => {
      const row = aclRow({ name: '', level: 'reader', roles: [] });
      body.append(row);
      row.querySelector('.acl-name').focus();
    });
    const save = el('button', { type: 'submit', id: 'acl-save' }, 'Save the list');
    const form = el('form', { id: 'acl-form' },
      el('dl', { class: 'facts' },
        el('dt', {}, 'Signed-in users without an entry'), el('dd', {}, def),
        el('dt', {}, 'Anonymous callers'), el('dd', {}, anon),
        el('dt', {}, 'Roles this database defines (comma-separated, no brackets)'), el('dd', {}, roles)),
      el('h2', {}, 'Entries'),
      el('table', { id: 'acl-table' }, el('thead', {}, el('tr', {},
        el('th', {}, 'Name'), el('th', {}, 'Level'), el('th', {}, 'Roles (comma-separated)'),
        el('th', {}, 'May create documents'), el('th', {}, 'May delete documents'),
        el('th', {}, 'Remove'))), body),
      el('div', { class: 'toolbar' }, add, save),
      el('p', { class: 'muted' }, 'Names and roles ignore case. The list must keep at least one ' +
        'Manager entry. Editors and above may always create documents; deleting also needs the ' +
        'right to edit the document.'));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const list = {
        default: def.value, anonymous: anon.value, roles: splitList(roles.value), entries: [],
      };
      for (const row of body.querySelectorAll('tr.acl-row')) {
        if (row.querySelector('.acl-remove').checked) continue;
        const name = row.querySelector('.acl-name').value;
        if (name.trim() === '' && row.dataset.fresh) continue;
        list.entries.push({
          name,
          level: row.querySelector('.acl-level').value,
          roles: splitList(row.querySelector('.acl-entry-roles').value),
          create_documents: row.querySelector('.acl-create').checked,
          delete_documents: row.querySelector('.acl-delete').checked,
        });
      }
      save.disabled = true;
      try {
        const stored = await api('PUT', '/db/' + enc(path) + '/_acl', list);
        status.replaceChildren(el('p', { class: 'notice', id: 'acl-saved' },
          'Saved: ' + stored.entries.length + (stored.entries.length === 1 ? ' entry' : ' entries') +
          ' and ' + stored.roles.length + (stored.roles.length === 1 ? ' role.' : ' roles.')));
        aclForm(host, status, path, stored);
      } catch (e) {
        save.disabled = false;
        status.replaceChildren(refusal('Not saved: the list is unchanged', e));
      }
    });
    host.replaceChildren(form);
  }

  function aclRow(e) {
    const name = el('input', { class: 'acl-name', 'aria-label': 'entry name', autocomplete: 'off' });
    name.value = e.name;
    const level = levelSelect(e.level, { class: 'acl-level', 'aria-label': 'level' });
    const roles = el('input', { class: 'acl-entry-roles', 'aria-label': 'roles', size: '24' });
    roles.value = (e.roles || []).join(', ');
    const flags = levelFlags(level.value);
    const create = el('input', { type: 'checkbox', class: 'acl-create', 'aria-label': 'may create documents' });
    const del = el('input', { type: 'checkbox', class: 'acl-delete', 'aria-label': 'may delete documents' });
    create.checked = e.create_documents === undefined ? flags.create : e.create_documents;
    del.checked = e.delete_documents === undefined ? flags.delete : e.delete_documents;
    // A new level brings its default flags (they can be changed after).
    level.addEventListener('change', () => {
      const f = levelFlags(level.value);
      create.checked = f.create;
      del.checked = f.delete;
    });
    const remove = el('input', { type: 'checkbox', class: 'acl-remove', 'aria-label': 'remove entry' });
    const row = el('tr', { class: 'acl-row' }, el('td', {}, name), el('td', {}, level), el('td', {}, roles),
      el('td', {}, create), el('td', {}, del), el('td', {}, remove));
    if (e.name === '') row.dataset.fresh = '1';
    return row;
  }

  // ---- views and folders -----------------------------------------------------------------

  function collectionUrl(path, kind, name) {
    return '/db/' + enc(path) + '/' + (kind === 'folder' ? 'folders' : 'views') + '/' + enc(name);
  }

  // GET /db/{db}/views; for Designers and above, define (POST
  // /db/{db}/views), bring up to date (…/update), rebuild (…/rebuild)
  // and delete. What a refusal says is shown as it comes (a bad formula:
  // the formula's error with its line and column).
  async function viewsPage(path) {
    const list = el('div', { id: 'views-list' });
    const panel = el('div', { id: 'views-panel' });
    const define = el('div', { id: 'views-define' });
    show(el('p', {}, el('a', { href: '#/db/' + enc(path) }, '‹ ' + path)),
      el('h1', {}, 'Views and folders: ' + path), takeFlash(), list, panel, define);
    let views, access;
    try {
      [views, access] = await Promise.all([api('GET', '/db/' + enc(path) + '/views'), accessTo(path)]);
    } catch (e) {
      list.replaceChildren(refusal('Not shown', e));
      return;
    }
    const designer = state.admin || atLeast(access, 'designer');
    const rows = views.map((v) => {
      const url = collectionUrl(path, v.kind, v.name);
      const cells = [
        el('td', {}, el('a', { href: '#/db/' + enc(path) + '/view/' + v.kind + '/' + enc(v.name) }, v.name)),
        el('td', {}, v.kind),
      ];
      const acts = el('td', {});
      if (v.kind === 'view') {
        acts.append(button('Update', 'update-' + v.name, async () => {
          try {
            const r = await api('POST', url + '/update');
            panel.replaceChildren(el('p', { class: 'notice', id: 'views-result' },
              'Brought ' + v.name + ' up to date: index at change ' + r.seq + ', ' +
              fmt(r.changed) + ' changed notes taken in.'));
          } catch (e) {
            panel.replaceChildren(refusal('Not updated', e));
          }
        }), ' ');
      }
      if (designer) {
        acts.append(button('Rebuild', 'rebuild-' + v.name, async (ev) => {
          ev.target.disabled = true;
          panel.replaceChildren(el('p', { class: 'muted' }, 'Rebuilding ' + v.name + '…'));
          try {
            const r = await api('POST', url + '/rebuild');
            const counts = r.entries === undefined ? ''
              : ': ' + fmt(r.entries) + ' entries from ' + fmt(r.documents) + ' documents';
            panel.replaceChildren(el('p', { class: 'notice', id: 'views-result' },
              'Rebuilt ' + v.kind + ' ' + v.name + counts + ' in ' + fmt(r.seconds, 's') + '.'));
          } catch (e) {
            panel.replaceChildren(refusal('Not rebuilt', e));
          }
          ev.target.disabled = false;
        }), ' ', button('Delete…', 'delete-' + v.name, () => confirmIn(panel,
          'Delete the ' + v.kind + ' ' + v.name + '? Its index and definition go; the documents stay.',
          'Delete ' + v.name, async () => {
            await api('DELETE', url);
            go('#/db/' + enc(path) + '/views', 'Deleted the ' + v.kind + ' ' + v.name + '.');
          }), 'danger'));
      }
      cells.push(acts);
      return el('tr', {}, ...cells);
    });
    list.replaceChildren(el('table', { id: 'views' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Name'), el('th', {}, 'Kind'), el('th', {}, ''))),
      el('tbody', {}, ...(rows.length ? rows
        : [el('tr', {}, el('td', { colspan: '3', class: 'muted' }, 'No views or folders yet.'))]))));
    if (designer) define.replaceChildren(viewForm(path));
  }

  function columnRow() {
    const sort = el('select', { class: 'col-sort', 'aria-label': 'sort' },
      el('option', { value: 'none' }, 'unsorted'), el('option', { value: 'asc' }, 'ascending'),
      el('option', { value: 'desc' }, 'descending'));
    return el('tr', { class: 'col-row' },
      el('td', {}, el('input', { class: 'col-title', 'aria-label': 'column title', size: '16' })),
      el('td', {}, el('input', { class: 'col-formula', 'aria-label': 'column formula', size: '40' })),
      el('td', {}, sort),
      el('td', {}, el('input', { type: 'checkbox', class: 'col-categorized', 'aria-label': 'categorized' })));
  }

  function viewForm(path) {
    const name = el('input', { id: 'view-name', autocomplete: 'off' });
    const kind = el('select', { id: 'view-kind' },
      el('option', { value: 'view' }, 'view (documents chosen by a formula)'),
      el('option', { value: 'folder' }, 'folder (documents put in it)'));
    const selection = el('textarea', { id: 'view-selection', rows: '2' });
    selection.value = 'SELECT @All';
    const refresh = el('select', { id: 'view-refresh' },
      ...['auto_after_first_use', 'auto', 'manual'].map((r) => el('option', { value: r }, r)));
    const cols = el('tbody', { id: 'view-columns' }, columnRow());
    const status = el('div', { id: 'view-status' });
    kind.addEventListener('change', () => { selection.disabled = kind.value === 'folder'; });
    const form = el('form', { class: 'panel', id: 'view-form' },
      el('h2', {}, 'Define a view or folder'),
      el('div', { class: 'toolbar' }, el('label', {}, 'Name ', name), el('label', {}, 'Kind ', kind),
        el('label', {}, 'Index refresh ', refresh)),
      el('label', {}, 'Selection formula (views only; docs/formula.md)', selection),
      el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'Column title'),
        el('th', {}, 'Formula (an item name or an expression)'), el('th', {}, 'Sort'),
        el('th', {}, 'Categorized (first column)'))), cols),
      el('div', { class: 'toolbar' }, button('Add column', 'view-add-column', () => cols.append(columnRow())),
        el('button', { type: 'submit', id: 'view-create' }, 'Create')),
      status);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const def = { name: name.value, kind: kind.value, refresh: refresh.value, columns: [] };
      if (kind.value === 'view') def.selection = selection.value;
      for (const row of cols.querySelectorAll('tr.col-row')) {
        const title = row.querySelector('.col-title').value;
        const formula = row.querySelector('.col-formula').value;
        if (title === '' && formula === '') continue;
        def.columns.push({
          title, formula, sort: row.querySelector('.col-sort').value,
          categorized: row.querySelector('.col-categorized').checked,
        });
      }
      try {
        await api('POST', '/db/' + enc(path) + '/views', def);
        go('#/db/' + enc(path) + '/views', 'Created the ' + def.kind + ' ' + def.name + '.');
      } catch (e) {
        status.replaceChildren(refusal('Not created', e));
      }
    });
    return form;
  }

  function viewPage(path, kind, name) {
    const listing = el('div', { id: 'listing' });
    show(el('p', {}, el('a', { href: '#/db/' + enc(path) + '/views' }, '‹ Views and folders of ' + path)),
      el('h1', {}, (kind === 'folder' ? 'Folder ' : 'View ') + name), listing);
    viewListing(listing, path, kind === 'folder' ? 'folder' : 'view', name);
  }

  // ---- fixup ----------------------------------------------------------------------------

  // POST /db/{db}/fixup (administrators): every page checked, the file
  // repaired if it must be; the report as the server gives it.
  function fixupPanel(host, path) {
    const dry = el('input', { type: 'checkbox', id: 'fixup-dry' });
    const status = el('div', { id: 'fixup-result' });
    const run = button('Run fixup', 'fixup-go', async () => {
      run.disabled = true;
      status.replaceChildren(el('p', { class: 'muted', id: 'fixup-running' }, 'Fixing up ' + path + '…'));
      try {
        const r = await api('POST', '/db/' + enc(path) + '/fixup', { dry_run: dry.checked });
        const facts = [
          ['Result', (r.dry_run ? 'dry run, nothing written: ' : '') +
            (r.clean ? 'the file is sound' : r.lost_anything ? 'something was lost (below)' : 'repaired')],
          ['Pages', fmt(r.pages) + ' checked, ' + fmt(r.pages_bad) + ' bad'],
          ['Notes', fmt(r.notes_salvaged) + ' kept (' + fmt(r.notes_from_orphan_pages) +
            ' from pages no index reached), ' + r.notes_lost.length + ' lost'],
          ['Attachments', fmt(r.attachments_checked) + ' checked, ' + r.attachments_lost.length + ' lost'],
          ['Indexes', (r.indexes_agreed ? 'agreed' : 'disagreed') + ' with the note table' +
            (r.indexes_rebuilt.length ? '; rebuilt: ' + r.indexes_rebuilt.join(', ') : '')],
          ['Header', r.header_lost ? 'lost (the title is gone)' : 'read'],
          ['Instance id', (r.old_instance || '–') + ' → ' + (r.new_instance || 'unchanged')],
        ];
        const lost = [...r.bad_pages.map((p) => 'page ' + p.page + ': ' + p.reason),
          ...r.notes_lost.map((n) => 'note ' + n.note_id + (n.unid ? ' (UNID ' + n.unid + ')' : '') + ': ' + n.reason),
          ...r.attachments_lost.map((a) => a.name + ' of ' + a.unid + ': ' + a.reason)];
        status.replaceChildren(el('dl', { class: 'facts', id: 'fixup-report' },
          ...facts.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
        ...(lost.length ? [el('ul', {}, ...lost.map((l) => el('li', {}, l)))] : []));
      } catch (e) {
        status.replaceChildren(refusal('Fixup failed', e));
      }
      run.disabled = false;
    });
    host.replaceChildren(el('div', { class: 'panel' }, el('h2', {}, 'Fixup ' + path),
      el('p', { class: 'muted' }, 'Reads and checks every page, note and attachment, then rewrites ' +
        'the file from what it kept, indexes and views rebuilt, with a new instance id: take a new ' +
        'backup of it afterwards. A dry run only checks and writes nothing. The database must be ' +
        'idle (one in use is refused); requests that come meanwhile wait until fixup is done.'),
      el('div', { class: 'toolbar' }, el('label', {}, dry, ' dry run (check only)'), run), status));
  }

  // ---- mail queue ------------------------------------------------------------------------

  // GET /mail/queue (administrators): each message still in a mail box,
  // each recipient's state, attempts, next attempt and why it waits; and
  // the router's figures from GET /stats. Read-only.
  async function mailPage() {
    const summary = el('dl', { class: 'facts', id: 'router-facts' });
    const host = el('div', { id: 'queue' });
    show(el('h1', {}, 'Mail queue'), takeFlash(),
      el('p', { class: 'muted' }, 'What waits in the mail boxes for the router, oldest first. ' +
        'A recipient is waiting before its first attempt and retrying after a failed one; ' +
        'mail users are on the ', el('a', { href: '#/users' }, 'Users'), ' page.'),
      summary, host);
    try {
      const [q, stats] = await Promise.all([api('GET', '/mail/queue'), api('GET', '/stats')]);
      const rows = [
        ['Mail boxes', q.boxes.map((b) => b.path + ': ' + fmt(b.pending) + ' pending').join(' · ') || 'none yet'],
        ['Messages waiting (last pass)', fmt(stats['router.waiting'])],
        ['Recipients retrying (last pass)', fmt(stats['router.retrying'])],
        ['Delivered since start', fmt(stats['router.delivered'])],
        ['Non-delivery reports since start', fmt(stats['router.ndr'])],
        ['Delivery latency p50 / p99', fmt(stats['router.latency_p50_ms'], 'ms') + ' / ' +
          fmt(stats['router.latency_p99_ms'], 'ms')],
      ];
      if (stats['outbound.waiting'] !== undefined) {
        // The queue for other domains (a smarthost or routes configured):
        // its figures only; the messages stay in the server's queue.
        rows.push(['Other domains: waiting / retrying', fmt(stats['outbound.waiting']) + ' / ' +
          fmt(stats['outbound.retrying'])],
        ['Other domains: handed over / given up since start', fmt(stats['outbound.delivered']) + ' / ' +
          fmt(stats['outbound.failed'])]);
      }
      if (q.unreadable) rows.push(['Listed but unreadable', fmt(q.unreadable)]);
      summary.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
      const body = q.messages.flatMap((m) => m.recipients.map((r, i) => el('tr', { class: 'queue-row' },
        el('td', {}, i === 0 ? fmt(m.deposited, 'when') : ''),
        el('td', {}, i === 0 ? m.from : ''),
        el('td', {}, i === 0 ? m.subject : ''),
        el('td', {}, r.address),
        el('td', { class: r.state === 'retrying' || r.state === 'failed' ? 'state-bad' : '' }, r.state),
        el('td', { class: 'num' }, fmt(r.attempts)),
        el('td', {}, r.state === 'waiting' || r.state === 'retrying'
          ? (r.next_attempt ? fmt(r.next_attempt, 'when') : 'next pass') : '–'),
        el('td', {}, r.reason))));
      host.replaceChildren(el('table', { id: 'queue-table' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Deposited'), el('th', {}, 'From'), el('th', {}, 'Subject'),
          el('th', {}, 'Recipient'), el('th', {}, 'State'), el('th', { class: 'num' }, 'Attempts'),
          el('th', {}, 'Next attempt'), el('th', {}, 'Reason'))),
        el('tbody', {}, ...(body.length ? body
          : [el('tr', {}, el('td', { colspan: '8', class: 'muted' }, 'The queue is empty.'))]))));
    } catch (e) {
      host.replaceChildren(refusal('Not shown', e));
    }
  }

  // ---- replication and backup ------------------------------------------------------------

  // The [[replication]] entries and the log's archive state, from GET
  // /stats (signed-in users); administrators start a backup (POST
  // /admin/backup) or archive the log (POST /admin/archive).
  async function replicationPage() {
    const entries = el('div', { id: 'replication' });
    const backup = el('div', { id: 'backup' });
    show(el('h1', {}, 'Replication and backup'), takeFlash(),
      el('h2', {}, 'Scheduled replication ([[replication]] in folio.toml)'), entries,
      el('h2', {}, 'Backup and the log archive'), backup);
    let stats;
    try {
      stats = await api('GET', '/stats');
    } catch (e) {
      entries.replaceChildren(refusal('Not shown', e));
      return;
    }
    const names = [...new Set(Object.keys(stats).filter((k) => k.startsWith('replication.') &&
      k.split('.').length >= 3).map((k) => k.slice('replication.'.length, k.lastIndexOf('.'))))].sort();
    const get = (n, f) => stats['replication.' + n + '.' + f];
    const panel = el('div', { id: 'replication-panel' });
    const runNow = (n) => button('Run now', 'run-' + n, async (ev) => {
      ev.target.disabled = true;
      try {
        const r = await api('POST', '/admin/replication/' + enc(n) + '/run');
        go('#/replication', r.state === 'running'
          ? 'The entry ' + n + ' is running already; it finishes on its own.'
          : 'The entry ' + n + ' runs now; its result shows here when it ends.');
      } catch (e) {
        panel.replaceChildren(refusal('Not run', e));
        ev.target.disabled = false;
      }
    });
    const rows = names.map((n) => el('tr', {},
      el('td', {}, n), el('td', {}, String(get(n, 'result') ?? '–')),
      el('td', {}, fmt(get(n, 'last_run') || 'never', 'when')),
      el('td', { class: 'num' }, get(n, 'next_run_s') === undefined ? '–' : 'in ' + fmt(get(n, 'next_run_s'), 's')),
      el('td', { class: 'num' }, fmt(get(n, 'runs'))), el('td', { class: 'num' }, fmt(get(n, 'errors'))),
      el('td', { class: 'num' }, fmt(get(n, 'documents'))), el('td', { class: 'num' }, fmt(get(n, 'bytes'), 'B')),
      el('td', {}, state.admin ? runNow(n) : '')));
    entries.replaceChildren(el('table', { id: 'replication-table' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Entry'), el('th', {}, 'Last result'), el('th', {}, 'Last run'),
        el('th', { class: 'num' }, 'Next run'), el('th', { class: 'num' }, 'Runs'), el('th', { class: 'num' }, 'Failures'),
        el('th', { class: 'num' }, 'Documents (last run)'), el('th', { class: 'num' }, 'Bytes (last run)'), el('th', {}, ''))),
      el('tbody', {}, ...(rows.length ? rows
        : [el('tr', {}, el('td', { colspan: '9', class: 'muted' }, 'No [[replication]] entries on this server.'))]))),
    panel);
    const facts = [
      ['Log style', stats['log.style'] || 'unlogged'],
      ['Log state', stats['log.state'] || '–'],
      ['Last archive', stats['log.last_archive'] ? fmt(stats['log.last_archive'], 'when')
        : 'not archive style: backups need translog.style = "archive"'],
      ['New backup needed (fixed-up databases)', stats['fixup.backup_needed'] || '–'],
    ];
    const factList = el('dl', { class: 'facts', id: 'backup-facts' },
      ...facts.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))]));
    backup.replaceChildren(factList);
    if (!state.admin) return;
    const history = el('div', { id: 'backup-history' });
    backup.append(backupForm(), el('h2', {}, 'Backup history (newest first)'), history);
    let h;
    try {
      h = await api('GET', '/admin/backups');
    } catch (e) {
      history.replaceChildren(refusal('Not shown', e));
      return;
    }
    const good = h.runs.find((r) => r.kind === 'backup' && r.result === 'ok');
    factList.prepend(el('dt', {}, 'Last successful backup'), el('dd', { id: 'last-backup' }, good
      ? fmt(good.started, 'when') + ' · ' + fmt(good.bytes, 'B') + ' in ' + fmt(good.millis, 'ms') + ' to ' + good.dir
      : 'none in the history'));
    historyTable(history, h, 20);
  }

  // GET /admin/backups: the last backup and archive runs, kept by the
  // server in <data>/backups.json, so they outlive a restart.
  function historyTable(host, h, shown) {
    const rows = h.runs.slice(0, shown).map((r) => el('tr', { class: 'history-row' },
      el('td', {}, fmt(r.started, 'when')), el('td', {}, r.kind),
      el('td', { class: r.result === 'ok' ? '' : 'state-bad' }, r.result),
      el('td', {}, r.dir), el('td', {}, r.kind === 'backup' ? r.databases.join(', ') : '–'),
      el('td', { class: 'num' }, fmt(r.bytes, 'B')), el('td', { class: 'num' }, fmt(r.extents)),
      el('td', { class: 'num' }, fmt(r.millis, 'ms'))));
    host.replaceChildren(el('table', { id: 'history-table' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Started'), el('th', {}, 'Kind'), el('th', {}, 'Result'),
        el('th', {}, 'Directory'), el('th', {}, 'Databases'), el('th', { class: 'num' }, 'Size copied'),
        el('th', { class: 'num' }, 'Log extents archived'), el('th', { class: 'num' }, 'Duration'))),
      el('tbody', {}, ...(rows.length ? rows
        : [el('tr', {}, el('td', { colspan: '8', class: 'muted' }, 'No backup or archive has run yet.'))]))),
    el('p', { class: 'muted' }, 'The server keeps the last ' + fmt(h.capacity) + ' runs; this page shows up to ' + shown + '.'));
  }

  function backupForm() {
    const dest = el('input', { id: 'backup-dest', size: '40', placeholder: '/backups/monday (absolute, on the server)' });
    const status = el('div', { id: 'backup-status' });
    const form = el('form', { class: 'panel', id: 'backup-form' },
      el('div', { class: 'toolbar' }, el('strong', {}, 'Back up every database to '), dest,
        el('button', { type: 'submit', id: 'backup-go' }, 'Back up now'),
        button('Archive the log now', 'archive-go', async () => {
          status.replaceChildren(el('p', { class: 'muted' }, 'Archiving…'));
          try {
            const r = await api('POST', '/admin/archive');
            go('#/replication', 'Archived ' + fmt(r.extents) + ' log extents (' +
              fmt(r.bytes, 'B') + ') to ' + r.dir + ' in ' + fmt(r.millis, 'ms') + '.');
          } catch (e) {
            status.replaceChildren(refusal('Not archived', e));
          }
        })), status);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      status.replaceChildren(el('p', { class: 'muted' }, 'Backing up…'));
      try {
        const r = await api('POST', '/admin/backup', { dest: dest.value.trim() });
        go('#/replication', 'Backed up ' + r.databases.length + ' databases (' + fmt(r.bytes, 'B') +
          ') to ' + r.dest + ' in ' + fmt(r.millis, 'ms') + '.');
      } catch (e) {
        status.replaceChildren(refusal('Not backed up', e));
      }
    });
    return form;
  }

  // ---- users ---------------------------------------------------------------------------

  // Server users (/_users) and mail users (/mail/users): administrators
  // only; anyone else is shown the server's refusal.
  async function usersPage() {
    const serverHost = el('div', { id: 'server-users' });
    const mailHost = el('div', { id: 'mail-users' });
    show(el('h1', {}, 'Users'), takeFlash(),
      el('h2', {}, 'Server users'),
      el('p', { class: 'muted' }, 'Who may sign in to this server. Passwords are stored as argon2 hashes; ' +
        'an API token is shown once, when it is made.'),
      serverHost,
      el('h2', {}, 'Mail users'),
      el('p', { class: 'muted' }, 'People in the mail directory (names.fdb), each with a mail file.'),
      mailHost);
    serverUsers(serverHost);
    mailUsers(mailHost);
  }

  async function serverUsers(host) {
    const table = el('div');
    const panel = el('div', { id: 'user-panel' });
    const refresh = async () => {
      try {
        listServerUsers(table, panel, refresh, await api('GET', '/_users'));
        return true;
      } catch (e) {
        host.replaceChildren(refusal('Not shown', e));
        return false;
      }
    };
    if (!await refresh()) return;
    host.replaceChildren(table, panel, newUserForm());
  }

  function listServerUsers(host, panel, refresh, users) {
    const rows = users.map((u) => el('tr', {},
      el('td', {}, u.name), el('td', {}, u.admin ? 'administrator' : 'user'), el('td', {}, fmt(u.created, 'date')),
      el('td', {}, ...(u.tokens.length ? u.tokens.map((t) => el('span', { class: 'token' }, t, ' ',
        button('Revoke', 'revoke-' + u.name + '-' + t, () => confirmIn(panel,
          'Revoke the API token ' + t + ' of ' + u.name + '? Programs using it can no longer sign in.',
          'Revoke ' + t, async () => {
            await api('DELETE', '/_users/' + enc(u.name) + '/tokens/' + enc(t));
            go('#/users', 'Revoked the token ' + t + ' of ' + u.name + '.');
          })))) : ['none'])),
      el('td', {},
        button('Reset password…', 'password-' + u.name, () => passwordPanel(panel, u.name)),
        ' ', button('New token…', 'token-' + u.name, () => tokenPanel(panel, u.name, refresh)),
        ' ', u.name.toLowerCase() === (state.user || '').toLowerCase() ? null
          : button('Remove…', 'remove-' + u.name, () => confirmIn(panel,
            'Remove the server user ' + u.name + '? Their sessions and API tokens stop working at once.',
            'Remove ' + u.name, async () => {
              await api('DELETE', '/_users/' + enc(u.name));
              go('#/users', 'Removed the server user ' + u.name + '.');
            }), 'danger'))));
    host.replaceChildren(el('table', { id: 'users' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Name'), el('th', {}, 'Kind'), el('th', {}, 'Added'),
        el('th', {}, 'API tokens'), el('th', {}, ''))),
      el('tbody', {}, ...rows)));
  }

  function newUserForm() {
    const name = el('input', { id: 'new-user-name', autocomplete: 'off' });
    const password = el('input', { id: 'new-user-password', type: 'password', autocomplete: 'new-password' });
    const admin = el('input', { id: 'new-user-admin', type: 'checkbox' });
    const status = el('div');
    const form = el('form', { class: 'panel', id: 'new-user' },
      el('div', { class: 'toolbar' }, el('strong', {}, 'Add a user'),
        el('label', {}, 'Name ', name), el('label', {}, 'Password (8 characters at least) ', password),
        el('label', {}, admin, ' administrator'),
        el('button', { type: 'submit', id: 'new-user-add' }, 'Add')),
      status);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        const u = await api('POST', '/_users', { name: name.value.trim(), password: password.value, admin: admin.checked });
        password.value = '';
        go('#/users', 'Added the server user ' + u.name + '.');
      } catch (e) {
        status.replaceChildren(refusal('Not added', e));
      }
    });
    return form;
  }

  function passwordPanel(host, name) {
    const password = el('input', { id: 'reset-password', type: 'password', autocomplete: 'new-password' });
    const status = el('div');
    const form = el('form', { class: 'panel', id: 'password-form' },
      el('div', { class: 'toolbar' }, 'New password for ' + name + ' ', password,
        el('button', { type: 'submit', id: 'reset-go' }, 'Set password')),
      el('p', { class: 'muted' }, 'Their sessions end; their API tokens keep working.'), status);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        await api('PUT', '/_users/' + enc(name) + '/password', { password: password.value });
        password.value = '';
        go('#/users', 'Set a new password for ' + name + '.');
      } catch (e) {
        status.replaceChildren(refusal('Not set', e));
      }
    });
    host.replaceChildren(form);
  }

  // Makes a token and shows it this once; `refresh` redraws the list (its
  // new label), leaving the token on the page.
  function tokenPanel(host, name, refresh) {
    const label = el('input', { id: 'token-label', placeholder: 'label, e.g. prometheus' });
    const status = el('div');
    const form = el('form', { class: 'panel', id: 'token-form' },
      el('div', { class: 'toolbar' }, 'New API token for ' + name + ', labelled ', label,
        el('button', { type: 'submit', id: 'token-go' }, 'Make token')), status);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        const r = await api('POST', '/_users/' + enc(name) + '/tokens', { label: label.value.trim() });
        status.replaceChildren(el('div', { class: 'notice' },
          el('p', {}, 'The token ' + r.label + ' of ' + r.user + ' (copy it now: it is not shown again):'),
          el('code', { id: 'new-token' }, r.token)));
        refresh();
      } catch (e) {
        status.replaceChildren(refusal('Not made', e));
      }
    });
    host.replaceChildren(form);
  }

  async function mailUsers(host) {
    let people;
    try {
      people = await api('GET', '/mail/users');
    } catch (e) {
      host.replaceChildren(refusal('Not shown', e));
      return;
    }
    const panel = el('div', { id: 'mail-panel' });
    const rows = people.map((p) => el('tr', {},
      el('td', {}, p.name), el('td', {}, p.short_name), el('td', {}, (p.aliases || []).join(', ')),
      el('td', {}, p.mail_file), el('td', {}, p.server_user || ''),
      el('td', {}, button('Remove…', 'remove-mail-' + p.short_name, () => {
        const del = el('input', { type: 'checkbox', id: 'delete-mail-file' });
        confirmIn(panel, 'Take ' + p.name + ' out of the mail directory?', 'Remove ' + p.name, async () => {
          const r = await api('DELETE', '/mail/users/' + enc(p.name) + (del.checked ? '?delete_file=true' : ''));
          go('#/users', 'Removed ' + r.removed + ' from the directory; mail file ' + r.mail_file + ' ' + r.file + '.');
        });
        document.getElementById('confirm').insertBefore(
          el('p', {}, el('label', {}, del, ' also delete the mail file ' + p.mail_file)),
          document.getElementById('confirm').querySelector('.toolbar'));
      }, 'danger'))));
    const name = el('input', { id: 'new-mail-name', placeholder: 'Alice Smith' });
    const aliases = el('input', { id: 'new-mail-aliases', placeholder: 'alice@example.com, …' });
    const user = el('input', { id: 'new-mail-user', placeholder: 'defaults to the name' });
    const status = el('div');
    const form = el('form', { class: 'panel', id: 'new-mail-person' },
      el('div', { class: 'toolbar' }, el('strong', {}, 'Add a person'),
        el('label', {}, 'Name ', name), el('label', {}, 'Aliases ', aliases),
        el('label', {}, 'Server user ', user),
        el('button', { type: 'submit', id: 'new-mail-add' }, 'Add')), status);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const body = { name: name.value.trim() };
      const list = aliases.value.split(',').map((a) => a.trim()).filter((a) => a);
      if (list.length) body.aliases = list;
      if (user.value.trim()) body.server_user = user.value.trim();
      try {
        const p = await api('POST', '/mail/users', body);
        go('#/users', 'Added ' + p.name + ' with the mail file ' + p.mail_file + '.');
      } catch (e) {
        status.replaceChildren(refusal('Not added', e));
      }
    });
    host.replaceChildren(el('table', { id: 'mail-people' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Name'), el('th', {}, 'Short name'), el('th', {}, 'Aliases'),
        el('th', {}, 'Mail file'), el('th', {}, 'Server user'), el('th', {}, ''))),
      el('tbody', {}, ...(rows.length ? rows : [el('tr', {}, el('td', { colspan: '6', class: 'muted' }, 'Nobody yet.'))]))),
    panel, form);
  }

  // ---- start ---------------------------------------------------------------------------

  api('GET', '/_session').then(signedIn, () => signedOut());
})();
