// agentv HTML report: renders the case table from the index and each case's drill-down from
// its data block, on demand. User data only ever reaches the page through text nodes
// (textContent), never as markup.
'use strict';
(function () {
  var PAGE_SIZE = 100;
  var byId = function (id) { return document.getElementById(id); };
  var meta = JSON.parse(byId('meta').textContent);
  var rows = JSON.parse(byId('index').textContent);
  var groups = meta.groups;
  var multi = groups.length > 1;
  var state = { view: multi ? 'side' : 'cases', sort: null, dir: 1, page: 0, query: '', status: '', open: null };
  var items = [];

  // --- DOM helpers: strings become text nodes, never HTML. ---
  function el(tag, cls) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function add(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
    node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
  function pre(text) { return el('pre', null, text); }
  function json(value) { return JSON.stringify(value, null, 2); }
  function fold(label, content, open) {
    var d = el('details', null, el('summary', null, label), content);
    if (open) d.open = true;
    return d;
  }

  // --- Formatting. ---
  function score(s) { return typeof s === 'number' ? s.toFixed(3) : '–'; }
  function seconds(ms) { return typeof ms === 'number' ? (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s' : ''; }
  function dollars(usd) { return typeof usd === 'number' ? '$' + usd.toFixed(4) : '\u2013'; }
  function outcome(row) { return row.x === 'ok' ? row.v : 'error'; }
  function badge(row) {
    var kind = outcome(row);
    var text = row.x === 'ok' ? row.v : row.x.replace('_', ' ');
    return el('span', 'badge ' + kind, text);
  }
  function groupDot(g) { return el('span', 'dot g' + (g % 6)); }

  // --- Items of the two views. ---
  function caseItems() {
    return rows.map(function (row, n) { return { rows: [n], first: row }; });
  }
  function sideItems() {
    var byKey = new Map();
    var list = [];
    rows.forEach(function (row, n) {
      var item = byKey.get(row.k);
      if (!item) { item = { rows: [], cells: new Array(groups.length).fill(null), first: row }; byKey.set(row.k, item); list.push(item); }
      item.rows.push(n);
      if (item.cells[row.g] === null) item.cells[row.g] = n;
    });
    list.forEach(function (item) {
      var a = item.cells[0], b = item.cells[groups.length - 1];
      item.delta = (a !== null && b !== null && rows[a].x === 'ok' && rows[b].x === 'ok') ? rows[b].s - rows[a].s : null;
    });
    return list;
  }
  var allCases = caseItems();
  var allSide = multi ? sideItems() : [];

  // --- Columns: label, sort key, cell. ---
  function caseColumns() {
    var cols = [
      { label: '#', key: function (it) { return it.rows[0]; }, cell: function (it) { return el('td', 'num', it.rows[0] + 1); } },
      { label: 'Case', key: function (it) { return it.first.i; }, cell: function (it) { return el('td', 'id', it.first.i); } },
      { label: meta.compare ? 'Run' : 'Target', key: function (it) { return meta.compare ? groups[it.first.g].label : it.first.t; },
        cell: function (it) { return el('td', null, multi ? groupDot(it.first.g) : null, meta.compare ? groups[it.first.g].label : it.first.t); } },
      { label: 'Dataset', key: function (it) { return it.first.d; }, cell: function (it) { return el('td', null, it.first.d); } },
      { label: 'Score', key: function (it) { return it.first.s; }, cell: function (it) { return el('td', 'num', score(it.first.s)); } },
      { label: 'Verdict', key: function (it) { return outcome(it.first); }, cell: function (it) { return el('td', null, badge(it.first)); } },
      { label: 'Duration', key: function (it) { return it.first.ms === undefined ? -1 : it.first.ms; }, cell: function (it) { return el('td', 'num', seconds(it.first.ms)); } },
      { label: 'Cost', key: function (it) { return it.first.usd === undefined ? -1 : it.first.usd; }, cell: function (it) { return el('td', 'num', dollars(it.first.usd)); } },
      { label: 'First miss', key: function (it) { return it.first.m || ''; }, cell: function (it) { var td = el('td', 'miss', it.first.m || ''); td.title = it.first.m || ''; return td; } }
    ];
    if (meta.compare) cols.splice(3, 0, { label: 'Target', key: function (it) { return it.first.t; }, cell: function (it) { return el('td', null, it.first.t); } });
    return cols;
  }
  function sideColumns() {
    var cols = [
      { label: 'Case', key: function (it) { return it.first.i; }, cell: function (it) { return el('td', 'id', it.first.i); } },
      { label: 'Dataset', key: function (it) { return it.first.d; }, cell: function (it) { return el('td', null, it.first.d); } }
    ];
    if (meta.compare) cols.push({ label: 'Target', key: function (it) { return it.first.t; }, cell: function (it) { return el('td', null, it.first.t); } });
    groups.forEach(function (g, gi) {
      cols.push({
        label: g.label, dot: gi,
        key: function (it) { var n = it.cells[gi]; return n === null ? -2 : (rows[n].x === 'ok' ? rows[n].s : -1); },
        cell: function (it) {
          var n = it.cells[gi];
          if (n === null) return el('td', 'num', '—');
          return el('td', 'num', score(rows[n].s), ' ', badge(rows[n]));
        }
      });
    });
    cols.push({
      label: 'Δ ' + groups[groups.length - 1].label + ' − ' + groups[0].label,
      key: function (it) { return it.delta === null ? 0 : it.delta; },
      cell: function (it) {
        if (it.delta === null) return el('td', 'num', '');
        var cls = it.delta > 0.001 ? 'up' : (it.delta < -0.001 ? 'down' : '');
        return el('td', 'num delta ' + cls, (it.delta > 0 ? '+' : '') + it.delta.toFixed(3));
      }
    });
    return cols;
  }

  // --- Filtering, sorting, paging. ---
  function haystack(row) {
    if (row.h === undefined) row.h = (row.i + '\n' + row.t + '\n' + row.d + '\n' + (row.m || '') + '\n' + groups[row.g].label).toLowerCase();
    return row.h;
  }
  function matches(item) {
    return item.rows.some(function (n) {
      var row = rows[n];
      if (state.status && outcome(row) !== state.status) return false;
      return !state.query || haystack(row).indexOf(state.query) !== -1;
    });
  }
  function compare(a, b) {
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }
  function refresh() {
    var source = state.view === 'side' ? allSide : allCases;
    var cols = columns();
    items = source.filter(matches);
    if (state.sort !== null && cols[state.sort]) {
      var key = cols[state.sort].key, dir = state.dir;
      items = items.map(function (it, n) { return { it: it, k: key(it), n: n }; })
        .sort(function (a, b) { return compare(a.k, b.k) * dir || a.n - b.n; })
        .map(function (x) { return x.it; });
    }
    var pages = Math.max(1, Math.ceil(items.length / PAGE_SIZE));
    state.page = Math.min(state.page, pages - 1);
    render(cols, pages);
  }
  function columns() { return state.view === 'side' ? sideColumns() : caseColumns(); }

  function render(cols, pages) {
    var head = el('tr');
    cols.forEach(function (c, n) {
      var th = el('th', null, c.dot !== undefined ? groupDot(c.dot) : null, c.label);
      th.setAttribute('aria-sort', state.sort === n ? (state.dir > 0 ? 'ascending' : 'descending') : 'none');
      th.addEventListener('click', function () {
        if (state.sort === n) state.dir = -state.dir; else { state.sort = n; state.dir = 1; }
        state.page = 0;
        refresh();
      });
      head.appendChild(th);
    });
    byId('cases').tHead.replaceChildren(head);
    var start = state.page * PAGE_SIZE;
    var shown = items.slice(start, start + PAGE_SIZE).map(function (it) {
      var tr = el('tr');
      tr.tabIndex = 0;
      cols.forEach(function (c) { tr.appendChild(c.cell(it)); });
      if (state.open === it) tr.className = 'open';
      tr.addEventListener('click', function () { openItem(it, tr); });
      tr.addEventListener('keydown', function (e) { if (e.key === 'Enter') openItem(it, tr); });
      return tr;
    });
    byId('cases').tBodies[0].replaceChildren.apply(byId('cases').tBodies[0], shown);
    var total = state.view === 'side' ? allSide.length : allCases.length;
    byId('shown').textContent = items.length === total
      ? total + (state.view === 'side' ? ' case(s) side by side' : ' case(s)')
      : items.length + ' of ' + total + ' match';
    byId('page').textContent = items.length ? 'page ' + (state.page + 1) + ' of ' + pages + ' (rows ' + (start + 1) + '–' + Math.min(start + PAGE_SIZE, items.length) + ')' : 'no rows';
    byId('prev').disabled = state.page === 0;
    byId('next').disabled = state.page >= pages - 1;
  }

  // --- Drill-down. ---
  function load(n) {
    try { return JSON.parse(byId('c' + n).textContent); } catch (e) { return { error: String(e) }; }
  }
  function openItem(item, tr) {
    state.open = item;
    Array.prototype.forEach.call(document.querySelectorAll('#cases tr.open'), function (r) { r.className = ''; });
    if (tr) tr.className = 'open';
    var body = byId('detail-body');
    var cells = state.view === 'side' ? item.cells : item.rows;
    body.replaceChildren();
    cells.forEach(function (n, gi) {
      if (n === null) { body.appendChild(el('section', 'col', el('h2', null, groupDot(gi), groups[gi].label), el('p', 'kv', 'Not in this run.'))); return; }
      body.appendChild(caseColumn(n, load(n)));
    });
    byId('detail-title').textContent = item.first.i;
    byId('detail').hidden = false;
    byId('close').focus();
  }
  function closeDetail() {
    byId('detail').hidden = true;
    state.open = null;
    Array.prototype.forEach.call(document.querySelectorAll('#cases tr.open'), function (r) { r.className = ''; });
  }

  function caseColumn(n, data) {
    var row = rows[n];
    var col = el('section', 'col');
    col.appendChild(el('h2', null, multi ? groupDot(row.g) : null, multi ? groups[row.g].label + ' · ' : '', row.t));
    if (data.error && !data.r) { col.appendChild(el('p', 'err', 'Cannot read this case: ' + data.error)); return col; }
    var r = data.r;
    col.appendChild(el('p', null, badge(row), ' score ', el('strong', null, score(r.score)),
      el('span', 'kv', ' · ' + r.dataset + ' · attempt ' + r.attempt + (r.timestamp ? ' · ' + r.timestamp : '') +
        (r.conversation_id ? ' · conversation ' + r.conversation_id : ''))));
    if (r.error) col.appendChild(section('Error', pre(r.error), 'err'));
    col.appendChild(section('Input', input(r)));
    col.appendChild(section('Answer', pre(r.candidate_answer || '(empty)')));
    col.appendChild(section('Graders', graders(r)));
    if (r.reasoning) col.appendChild(section('Reasoning', pre(r.reasoning)));
    var tl = timeline(r.trace, r.trace_summary, r.execution_metrics);
    if (tl) col.appendChild(section('Tool calls', tl));
    if (r.truncated) col.appendChild(el('p', 'kv', 'The trace was cut to keep the record under ' + r.truncated.max_bytes + ' bytes (it had ' + r.truncated.original_bytes + '): ' + json(r.truncated)));
    if (r.execution_metrics) col.appendChild(section('Metrics', metrics(r.execution_metrics)));
    col.appendChild(fold('Raw record', pre(json(r))));
    return col;
  }
  function section(title, content, cls) { return el('div', cls || null, el('h3', null, title), content); }

  function message(role, content) {
    return el('div', 'msg', el('div', 'role', role), pre(typeof content === 'string' ? content : json(content)));
  }
  function input(r) {
    var req = r.lm_provider_request || r.agent_provider_request;
    if (!req) return el('p', 'kv', 'Not recorded.');
    var out = el('div');
    if (Array.isArray(req.chat_prompt)) {
      req.chat_prompt.forEach(function (m) { out.appendChild(message(m && m.role || 'message', m && m.content !== undefined ? m.content : m)); });
    }
    if (req.question !== undefined) out.appendChild(message('question', req.question));
    if (req.guidelines) out.appendChild(fold('guidelines', pre(typeof req.guidelines === 'string' ? req.guidelines : json(req.guidelines))));
    if (Array.isArray(req.guideline_paths) && req.guideline_paths.length) out.appendChild(el('p', 'kv', 'Guideline files: ' + req.guideline_paths.join(', ')));
    var known = { chat_prompt: 1, question: 1, guidelines: 1, guideline_paths: 1 };
    var rest = {};
    Object.keys(req).forEach(function (k) { if (!known[k]) rest[k] = req[k]; });
    if (Object.keys(rest).length) out.appendChild(fold('request metadata', pre(json(rest))));
    return out;
  }
  function list(cls, texts) {
    if (!texts || !texts.length) return null;
    return el('ul', cls, texts.map(function (t) { return el('li', null, t); }));
  }
  function graders(r) {
    var results = r.evaluator_results || [];
    if (!results.length) return el('div', null, list('hits', r.hits), list('misses', r.misses), (!r.hits || !r.hits.length) && (!r.misses || !r.misses.length) ? el('p', 'kv', 'No graders recorded.') : null);
    return el('div', null, results.map(function (g) {
      var row = { x: g.error ? 'grader_error' : 'ok', v: g.verdict };
      return el('div', 'grader',
        el('div', 'head', el('span', 'name', g.name), el('span', 'kv', g.type), badge(row),
          el('span', null, 'score ' + score(g.score)), el('span', 'kv', 'weight ' + g.weight)),
        g.error ? el('p', 'err', 'Could not grade: ' + g.error) : null,
        list('hits', g.hits), list('misses', g.misses),
        g.reasoning ? fold('reasoning', pre(g.reasoning), true) : null,
        g.details ? fold('details', pre(json(g.details))) : null,
        g.evaluator_provider_request ? fold('judge prompt', prompt(g.evaluator_provider_request)) : null);
    }));
  }
  function prompt(req) {
    if (!req || typeof req !== 'object' || Array.isArray(req)) return pre(typeof req === 'string' ? req : json(req));
    return el('div', null, Object.keys(req).map(function (k) {
      return el('div', 'msg', el('div', 'role', k), pre(typeof req[k] === 'string' ? req[k] : json(req[k])));
    }));
  }
  function timeline(trace, summary, metrics) {
    if (Array.isArray(trace) && trace.length) {
      return el('ol', 'timeline', trace.map(function (e) {
        return el('li', e.type || '',
          el('strong', null, e.name || e.type || 'event'), ' ', el('span', 'kv', (e.type || '') + (e.timestamp ? ' · ' + e.timestamp : '') + (typeof e.duration_ms === 'number' ? ' · ' + seconds(e.duration_ms) : '') + (e.id ? ' · ' + e.id : '')),
          e.text ? pre(e.text) : null,
          e.input !== undefined ? fold('input', pre(typeof e.input === 'string' ? e.input : json(e.input))) : null,
          e.output !== undefined ? fold('output', pre(typeof e.output === 'string' ? e.output : json(e.output))) : null);
      }));
    }
    var calls = summary && summary.tool_calls_by_name;
    if (!calls || !Object.keys(calls).length) return null;
    var durations = (metrics && metrics.tool_durations) || {};
    var longest = 1;
    Object.keys(durations).forEach(function (k) { (durations[k] || []).forEach(function (d) { if (d > longest) longest = d; }); });
    var grid = el('div', 'tools');
    Object.keys(calls).forEach(function (name) {
      var bars = el('div', 'calls');
      (durations[name] || []).forEach(function (d) {
        var bar = el('span', 'call');
        bar.style.width = Math.max(3, Math.round(160 * d / longest)) + 'px';
        bar.title = (d / 1000).toFixed(2) + ' s';
        bars.appendChild(bar);
      });
      grid.appendChild(el('strong', null, name));
      grid.appendChild(el('span', 'kv', '× ' + calls[name]));
      grid.appendChild(bars);
    });
    return el('div', null,
      el('p', 'kv', summary.event_count + ' event(s), ' + summary.error_count + ' error(s); from the trace summary (call order not recorded; bars are call durations)'),
      grid);
  }
  function metrics(m) {
    var parts = [];
    if (m.duration_ms !== undefined) parts.push('duration ' + seconds(m.duration_ms));
    if (m.cost_usd !== undefined) parts.push('cost ' + dollars(m.cost_usd));
    if (m.token_usage) parts.push('tokens ' + m.token_usage.input + ' in / ' + m.token_usage.output + ' out' + (m.token_usage.cached !== undefined ? ' (' + m.token_usage.cached + ' cached)' : ''));
    if (m.tool_call_count !== undefined) parts.push(m.tool_call_count + ' tool call(s)');
    if (m.exploration_ratio !== undefined) parts.push('exploration ' + (m.exploration_ratio * 100).toFixed(0) + ' %');
    return el('p', 'kv', parts.join(' · '));
  }

  // --- Wiring. ---
  byId('filter').addEventListener('input', function (e) { state.query = e.target.value.trim().toLowerCase(); state.page = 0; refresh(); });
  byId('status').addEventListener('change', function (e) { state.status = e.target.value; state.page = 0; refresh(); });
  byId('prev').addEventListener('click', function () { state.page--; refresh(); });
  byId('next').addEventListener('click', function () { state.page++; refresh(); });
  byId('close').addEventListener('click', closeDetail);
  document.addEventListener('keydown', function (e) { if (e.key === 'Escape') closeDetail(); });
  if (multi) {
    byId('views').hidden = false;
    Array.prototype.forEach.call(document.querySelectorAll('input[name=view]'), function (radio) {
      radio.checked = radio.value === state.view;
      radio.addEventListener('change', function () { state.view = radio.value; state.sort = null; state.page = 0; closeDetail(); refresh(); });
    });
  }
  refresh();
  document.documentElement.setAttribute('data-ready', String(rows.length));
  window.agentvReport = { ready: performance.now(), rows: rows.length };
})();
