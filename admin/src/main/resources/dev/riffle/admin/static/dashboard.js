// Riffle dashboard: plain script, no build step (docs/adr/0017-admin-http-and-dashboard.md). Polls the JSON API
// under ./api/ once a second, builds every element with the DOM (never innerHTML with data), and asks for
// confirmation in an in-page dialog before any action.
'use strict';

(function () {
  const POLL_MS = 1000;
  const STATUS_EVERY = 5; // ring and leader status every 5 polls: it changes slowly
  const ACTION_HEADER = 'X-Riffle-Admin';
  let readOnly = true; // until /api/status says otherwise: no button is drawn before the server's word
  let tick = 0;
  let jobsNextBefore = null;

  const $ = (sel) => document.querySelector(sel);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children) {
      if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  async function api(path, method) {
    const opts = { method: method || 'GET', headers: { Accept: 'application/json' } };
    if (opts.method === 'POST') opts.headers[ACTION_HEADER] = '1';
    const res = await fetch('api/' + path, opts);
    let body = null;
    try { body = await res.json(); } catch (e) { /* no JSON body */ }
    if (!res.ok) {
      const err = new Error((body && body.message) || res.status + ' ' + res.statusText);
      err.status = res.status;
      throw err;
    }
    return body;
  }

  function toast(text, isError) {
    const t = $('#toast');
    t.textContent = text;
    t.className = 'show' + (isError ? ' error' : '');
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => { t.className = ''; }, 3500);
  }

  // ---- confirmation dialog (in the page, so it can be styled, tested and never blocks the poll loop)

  function confirmAction(text) {
    return new Promise((resolve) => {
      const modal = $('#confirm');
      $('#confirm-text').textContent = text;
      modal.hidden = false;
      const done = (answer) => {
        modal.hidden = true;
        $('#confirm-ok').removeEventListener('click', ok);
        $('#confirm-cancel').removeEventListener('click', cancel);
        document.removeEventListener('keydown', key);
        resolve(answer);
      };
      const ok = () => done(true);
      const cancel = () => done(false);
      const key = (e) => { if (e.key === 'Escape') done(false); };
      $('#confirm-ok').addEventListener('click', ok);
      $('#confirm-cancel').addEventListener('click', cancel);
      document.addEventListener('keydown', key);
      $('#confirm-cancel').focus();
    });
  }

  async function act(question, path, success) {
    if (!(await confirmAction(question))) return;
    try {
      await api(path, 'POST');
      toast(success);
    } catch (e) {
      toast(e.message, true);
    }
    refresh(true);
  }

  // ---- formatting

  const nf = new Intl.NumberFormat();
  function rate(x) { return x >= 100 ? nf.format(Math.round(x)) : x.toFixed(x >= 10 ? 1 : 2); }
  function seconds(s) {
    if (!s) return '0 s';
    if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
    return (s / 3600).toFixed(1) + ' h';
  }
  function axis(v) { return Number.isInteger(v) ? String(v) : v.toFixed(1); }
  function when(iso) { return iso ? new Date(iso).toLocaleString() : ''; }

  // ---- queues

  // A table is rebuilt only when its data changed: an unchanged row stays the same element, so a click that lands
  // between two polls is never lost to a rebuilt button.
  const drawn = {};
  function changed(name, data) {
    const sig = JSON.stringify(data) + readOnly;
    if (drawn[name] === sig) return false;
    drawn[name] = sig;
    return true;
  }

  async function refreshQueues() {
    const data = await api('queues');
    $('#sampled').textContent = data.sampledAt ? 'sampled ' + new Date(data.sampledAt).toLocaleTimeString() : '';
    if (!changed('queues', data.queues)) return;
    const body = $('#queues tbody');
    body.replaceChildren(...data.queues.map((q) => el('tr', { 'data-queue': q.queue },
      el('td', { text: q.queue }),
      el('td', { class: q.paused ? 'paused' : '', 'data-field': 'state', text: q.paused ? 'paused' : 'running' }),
      el('td', { class: 'num', 'data-field': 'available', text: nf.format(q.available) }),
      el('td', { class: 'num', 'data-field': 'inFlight', text: nf.format(q.inFlight) }),
      el('td', { class: 'num', 'data-field': 'scheduled', text: nf.format(q.scheduled) }),
      el('td', { class: 'num', 'data-field': 'dlq', text: nf.format(q.dlq) }),
      el('td', { class: 'num', 'data-field': 'completed', text: nf.format(q.completed) }),
      el('td', { class: 'num', 'data-field': 'completedPerSecond', text: rate(q.completedPerSecond) }),
      el('td', { class: 'num', 'data-field': 'oldestWait', text: seconds(q.oldestAvailableAgeSeconds) }),
      el('td', { class: 'act' }, readOnly ? null : (q.paused
        ? el('button', { 'data-action': 'resume', 'data-queue': q.queue, text: 'Resume',
            onclick: () => act('Resume queue "' + q.queue + '"?', 'queues/' + encodeURIComponent(q.queue) + '/resume',
              'Queue ' + q.queue + ' resumed') })
        : el('button', { 'data-action': 'pause', 'data-queue': q.queue, text: 'Pause',
            onclick: () => act('Pause queue "' + q.queue + '"? Nothing of it is claimed until it is resumed.',
              'queues/' + encodeURIComponent(q.queue) + '/pause', 'Queue ' + q.queue + ' paused') })))
    )));
    $('#queues-empty').hidden = data.queues.length > 0;
    $('#queues-empty').textContent = data.sampledAt ? 'No queue yet.' : 'Waiting for the first sample\u2026';
  }

  // ---- charts: inline SVG, one polyline each over the sampler's history

  const SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function niceMax(v) {
    if (v <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  function chart(node, points, field, cls, format, historySeconds) {
    const W = 600, H = 170, L = 44, R = 8, T = 10, B = 20;
    const now = Date.now();
    const from = now - historySeconds * 1000;
    const max = niceMax(Math.max(0, ...points.map((p) => p[field])));
    const x = (t) => L + (W - L - R) * Math.max(0, (t - from) / (now - from));
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const parts = [];
    for (const f of [0, 0.5, 1]) {
      parts.push(svg('line', { class: 'grid', x1: L, x2: W - R, y1: y(max * f), y2: y(max * f) }));
      parts.push(svg('text', { class: 'axis', x: L - 4, y: y(max * f) + 4, 'text-anchor': 'end' },
        format(max * f)));
    }
    parts.push(svg('text', { class: 'axis', x: L, y: H - 4 }, '-' + Math.round(historySeconds / 60) + ' min'));
    parts.push(svg('text', { class: 'axis', x: W - R, y: H - 4, 'text-anchor': 'end' }, 'now'));
    const shown = points.filter((p) => p.t >= from);
    if (shown.length > 0) {
      parts.push(svg('polyline', { class: cls, 'data-points': shown.length,
        points: shown.map((p) => x(p.t).toFixed(1) + ',' + y(p[field]).toFixed(1)).join(' ') }));
    }
    node.replaceChildren(...parts);
  }

  async function refreshCharts() {
    const m = await api('metrics');
    chart($('#chart-throughput'), m.points, 'completedPerSecond', 'line-throughput',
      (v) => axis(v), m.historySeconds);
    chart($('#chart-latency'), m.points, 'oldestAvailableAgeSeconds', 'line-latency',
      (v) => axis(v) + 's', m.historySeconds);
  }

  // ---- DLQ

  async function refreshDlq() {
    const data = await api('dlq?limit=50');
    if (!changed('dlq', data.jobs)) return;
    $('#dlq tbody').replaceChildren(...data.jobs.map((j) => {
      const last = j.errors.length ? j.errors[j.errors.length - 1] : null;
      return el('tr', { 'data-job': j.id },
        el('td', { class: 'num' }, el('a', { href: '#', text: j.id, onclick: (e) => { e.preventDefault(); showJob(j.id); } })),
        el('td', { text: j.queue }),
        el('td', { text: j.kind }),
        el('td', { class: 'num', text: j.attempt + '/' + j.maxAttempts }),
        el('td', { text: j.dlqReason || '' }),
        el('td', { class: 'wrap', text: last ? last.message : '' }),
        el('td', { text: when(j.finalizedAt) }),
        el('td', { class: 'act' }, readOnly ? null : el('span', {},
          el('button', { class: 'primary', 'data-action': 'retry', 'data-job': j.id, text: 'Retry',
            onclick: () => act('Retry job ' + j.id + ' (' + j.kind + ')? It leaves the DLQ and runs again from attempt 0.',
              'dlq/' + j.id + '/retry', 'Job ' + j.id + ' retried') }),
          ' ',
          el('button', { class: 'danger', 'data-action': 'purge', 'data-job': j.id, text: 'Purge',
            onclick: () => act('Purge job ' + j.id + ' (' + j.kind + ') for good? This cannot be undone.',
              'dlq/' + j.id + '/purge', 'Job ' + j.id + ' purged') }))));
    }));
    $('#dlq-empty').hidden = data.jobs.length > 0;
  }

  // ---- jobs: search and detail

  function searchParams(before) {
    const f = new FormData($('#search'));
    const p = new URLSearchParams();
    for (const k of ['queue', 'kind', 'state']) if (f.get(k)) p.set(k, f.get(k).trim());
    if (before) p.set('before', before);
    p.set('limit', '25');
    return p;
  }

  async function search(more) {
    try {
      const p = searchParams(more ? jobsNextBefore : null);
      const data = await api('jobs?' + p);
      const rows = data.jobs.map((j) => el('tr', { 'data-job': j.id, onclick: () => showJob(j.id) },
        el('td', { class: 'num', text: j.id }), el('td', { text: j.state }), el('td', { text: j.queue }),
        el('td', { text: j.kind }), el('td', { class: 'num', text: j.attempt + '/' + j.maxAttempts }),
        el('td', { text: when(j.createdAt) })));
      if (more) $('#jobs tbody').append(...rows); else $('#jobs tbody').replaceChildren(...rows);
      jobsNextBefore = data.nextBefore;
      $('#jobs-more').hidden = data.nextBefore === null;
    } catch (e) {
      toast(e.message, true);
    }
  }

  async function showJob(id) {
    const box = $('#job-detail');
    try {
      const j = await api('jobs/' + encodeURIComponent(id));
      const dl = el('dl', {});
      const row = (k, v) => { if (v !== null && v !== undefined && v !== '') dl.append(el('dt', { text: k }), el('dd', { text: v })); };
      row('State', j.state);
      row('Kind', j.kind);
      row('Queue', j.queue + ' (priority ' + j.priority + ')');
      row('Attempts', j.attempt + ' of ' + j.maxAttempts + ' (run lease ' + j.runLease + ')');
      row('Created', when(j.createdAt));
      row('Run at', when(j.runAt));
      row('Attempted', when(j.attemptedAt));
      row('Finalized', when(j.finalizedAt));
      row('DLQ reason', j.dlqReason);
      row('Args', JSON.stringify(j.args));
      if (j.progress !== null) row('Progress', JSON.stringify(j.progress));
      const errors = el('ol', { class: 'errors' }, ...j.errors.map((e) => el('li', {},
        el('strong', { text: 'attempt ' + e.attempt }), ' at ' + when(e.at) + ': ' + e.message,
        e.exceptionClass ? el('span', { class: 'muted', text: ' (' + e.exceptionClass + ')' }) : null,
        e.stackTrace ? el('details', {}, el('summary', { text: 'stack trace' }), el('pre', { text: e.stackTrace })) : null)));
      const final = ['completed', 'failed', 'cancelled', 'dlq'].includes(j.state);
      const actions = el('p', {},
        !readOnly && !final ? el('button', { class: 'danger', 'data-action': 'cancel', 'data-job': j.id, text: 'Cancel job',
          onclick: () => act('Cancel job ' + j.id + '?', 'jobs/' + j.id + '/cancel', 'Job ' + j.id + ' cancelled')
            .then(() => showJob(j.id)) }) : null,
        ' ', el('button', { text: 'Close', onclick: () => { box.hidden = true; } }));
      box.replaceChildren(el('h3', { text: 'Job ' + j.id }), dl,
        j.errors.length ? el('div', {}, el('h4', { text: 'Errors (oldest first)' }), errors) : el('p', { class: 'muted', text: 'No errors.' }),
        actions);
      box.hidden = false;
      box.setAttribute('data-job', j.id);
    } catch (e) {
      toast(e.message, true);
    }
  }

  // ---- status and doctor

  async function refreshStatus() {
    const s = await api('status');
    readOnly = s.readOnly;
    document.body.classList.toggle('read-only', readOnly);
    $('#mode').hidden = !readOnly;
    $('#schema').textContent = 'schema ' + s.schema;
    const leader = $('#leader');
    leader.textContent = s.leaderPresent ? (s.thisProcessLeader ? 'leader: this process' : 'leader present') : 'no leader';
    leader.className = 'badge ' + (s.leaderPresent ? 'ok' : 'bad');
    $('#rings tbody').replaceChildren(...s.rings.map((r) => el('tr', { 'data-ring': r.ring },
      el('td', { text: r.ring }), el('td', { class: 'num', text: r.currentSlot }),
      el('td', { class: 'num', text: r.generation }), el('td', { class: 'num', text: r.slotCount }),
      el('td', { text: r.sealedSlots.join(', ') }))));
  }

  async function runDoctor() {
    const out = $('#doctor');
    $('#doctor-result').textContent = 'running\u2026';
    try {
      const r = await api('doctor');
      $('#doctor-result').textContent = r.ok ? 'ok: no invariant violated' : r.violations.length + ' violation(s)';
      $('#doctor-result').className = 'badge ' + (r.ok ? 'ok' : 'bad');
      out.textContent = JSON.stringify(r, null, 2);
      out.hidden = false;
    } catch (e) {
      $('#doctor-result').textContent = e.message;
    }
  }

  // ---- the poll loop: one pass at a time, never piling requests up behind a slow server

  let running = false;
  async function refresh(force) {
    if (running && !force) return;
    running = true;
    try {
      if (tick % STATUS_EVERY === 0 || force) await refreshStatus();
      await Promise.all([refreshQueues(), refreshCharts(), refreshDlq()]);
      document.body.setAttribute('data-refreshed', String(Date.now()));
    } catch (e) {
      $('#sampled').textContent = 'API error: ' + e.message;
    } finally {
      tick++;
      running = false;
    }
  }

  $('#search').addEventListener('submit', (e) => { e.preventDefault(); search(false); });
  $('#jobs-more').addEventListener('click', () => search(true));
  $('#lookup').addEventListener('click', () => {
    const id = new FormData($('#search')).get('id').trim();
    if (id) showJob(id);
  });
  $('#doctor-run').addEventListener('click', runDoctor);
  refresh(true).then(() => search(false));
  setInterval(() => refresh(false), POLL_MS);
})();
