// vprof HTML report, 5 of 5: renders the JSON document embedded in the page
// (#vprof-data, the document `vprof analyze --json` writes, plus `iterations`
// and `session` for an iterate session; docs/analyze.md) with plain DOM and
// inline SVG. Every number on the page is read from that document and only
// formatted here: nothing is recomputed but sums for display.
//
// Elements a test (or a script) may read, kept stable:
//   #top-factor  data-name, data-value (the ranked quantity: share or contribution)
//   #p50 #p90 #p99 #p999 #mean #max   data-ns (the JSON's number, unrounded)
//   #unfairness, #mean-client-cv  data-value (when the document has them)
//   body[data-render]            "ok", or "error" when a section failed to render
//   .render-error                the message of a section that failed
const main = document.getElementById('report');
main.textContent = '';
let failed = false;
function section(id, title, render) {
  const s = el('section', { id });
  if (title) s.appendChild(el('h2', { text: title }));
  try {
    if (render(s) === false) return;  // nothing to show: no section
  } catch (err) {
    failed = true;
    s.appendChild(el('p', { class: 'render-error', text: `This part could not be drawn: ${err && err.stack || err}` }));
    console.error('vprof report:', id, err);
  }
  main.appendChild(s);
}

// ------------------------------------------------------------ the header
section('summary', null, (s) => {
  s.appendChild(el('h1', { text: `vprof report — ${doc.root === 'latency' ? 'interval latency' : doc.root}` }));
  const runs = doc.runs || [];
  s.appendChild(el('p', { class: 'sub' },
    `${doc.intervals} intervals`, runs.length > 1 ? ` · ${runs.length} runs merged` : '',
    ` · ${doc.trace_dir}`,
    doc.session && doc.session.dir ? ` · session ${doc.session.dir}` : ''));
  const nav = el('nav', null);
  for (const [id, t] of [['distribution', 'Latency'], ['factors', 'Top factors'], ['causes', 'Top causes'], ['tree', 'Variance tree'],
                         ['types', 'By type'], ['clients', 'By client'], ['iterations', 'Iterations'],
                         ['quality', 'Data quality']])
    nav.appendChild(el('a', { href: '#' + id, 'data-section': id, text: t }));
  s.appendChild(nav);
  const top = (doc.factors || []).find((f) => f.rank === 1);
  const h = el('div', { class: 'headline' });
  if (top) {
    put(h, 'Top factor: ',
      el('b', { id: 'top-factor', 'data-name': top.name, 'data-value': factorValue(top), text: top.name }),
      ` carries ${pct(factorValue(top))} of ${rootName}`,
      top.tail && isNum(top.tail.p99) ? ` and ${pct(top.tail.p99)} of the p99 tail's excess over the mean` : '',
      top.call_sites && top.call_sites[0] && top.call_sites[0].call_site
        ? el('span', { class: 'muted' }, ' — at ', loc(top.call_sites[0].call_site)) : null,
      top.fragile ? el('span', { class: 'badge fragile', text: 'fragile' }) : null,
      top.significant === false ? el('span', { class: 'badge ns', text: 'not significant' }) : null);
  } else {
    put(h, el('span', { id: 'top-factor', 'data-name': '', text: 'No factor reaches the threshold' }),
      ` (d = ${doc.selection ? doc.selection.d : '?'} of ${rootName}).`);
  }
  s.appendChild(h);
  const l = doc.latency || {};
  const stats = el('div', { class: 'stats' });
  const stat = (id, k, v, text, cls) =>
    stats.appendChild(el('div', { class: 'stat' + (cls ? ' ' + cls : '') }, el('div', { class: 'k', text: k }),
      el('div', { class: 'v', id, 'data-ns': isNum(v) ? v : null, text: text !== undefined ? text : dur(v) })));
  stat('intervals', 'intervals', null, String(doc.intervals));
  stat('mean', 'mean', l.mean_ns);
  stat('stddev', 'stddev', l.stddev_ns);
  stat('p50', 'p50', l.p50_ns);
  stat('p90', 'p90', l.p90_ns);
  stat('p99', 'p99', l.p99_ns, undefined, 'p99');
  stat('p999', 'p99.9', l.p999_ns);
  stat('max', 'max', l.max_ns);
  s.appendChild(stats);
});

// ------------------------------------------------- latency distribution
section('distribution', 'Latency distribution', (s) => {
  const h = doc.latency && doc.latency.histogram;
  if (!h || !h.edges_ns || h.edges_ns.length < 2) {
    s.appendChild(el('p', { class: 'muted', text: 'No interval with a latency above 0 ns.' }));
    return;
  }
  const byType = (h.by_type || []).filter((t) => t.counts && t.counts.length === h.counts.length);
  const host = el('div', null);
  const controls = el('div', { class: 'controls' });
  const logBox = el('input', { type: 'checkbox', id: 'hist-logy' });
  controls.append(el('label', null, logBox, ' log count axis (shows the tail\'s few intervals)'));
  const draw = () => { host.textContent = ''; host.appendChild(histogram(h, byType, logBox.checked)); };
  logBox.addEventListener('change', draw);
  draw();
  s.appendChild(host);
  if (byType.length > 1) {
    const lg = el('div', { class: 'legend' });
    byType.forEach((t, i) => lg.appendChild(el('span', null,
      el('span', { class: 'swatch', 'data-color': i }), t.type || '(no type)')));
    for (const sw of lg.querySelectorAll('.swatch')) sw.style.background = PALETTE[+sw.dataset.color % PALETTE.length];
    s.appendChild(lg);
  }
  const pl = el('div', { class: 'legend' });
  for (const [name, key, color] of PCT_LINES) {
    const v = doc.latency[key];
    if (!isNum(v)) continue;
    const sw = el('span', { class: 'swatch' });
    sw.style.background = color;
    pl.appendChild(el('span', null, sw, `${name} ${dur(v)}`));
  }
  s.appendChild(pl);
  s.appendChild(controls);
  const notes = [`Bins: ${h.bins_per_decade} per decade of latency, log axis; percentiles by nearest rank.`];
  if (h.zero) notes.push(`${h.zero} intervals of 0 ns are not on the axis.`);
  if ((doc.runs || []).length > 1) notes.push('Latencies of the base run (run 0).');
  s.appendChild(el('p', { class: 'note', text: notes.join(' ') }));
});

// ---------------------------------------------------------- top factors
section('factors', 'Top factors', (s) => {
  const fs = (doc.factors || []).filter((f) => f.rank > 0);
  const sel = doc.selection || {};
  s.appendChild(el('p', { class: 'note' },
    `Ranked by ${quantity} × specificity (k = ${sel.k}, d = ${sel.d}, e = ${sel.e}; root at height ${sel.root_height}).`));
  if (!fs.length) {
    s.appendChild(el('p', { class: 'muted', text: 'No factor reaches the threshold.' }));
    return;
  }
  // One scale for every bar, so the rows compare.
  let lo = 0, hi = 1;
  for (const f of fs) {
    lo = Math.min(lo, factorValue(f), f.ci95 ? f.ci95[0] : 0);
    hi = Math.max(hi, factorValue(f), f.ci95 ? f.ci95[1] : 0);
  }
  const t = el('table', { id: 'factor-table' });
  t.appendChild(el('tr', null, el('th', { text: '#' }), el('th', { text: 'factor' }),
    el('th', { class: 'num', text: quantity }), el('th', { text: `${quantity} and its 95% interval` }),
    el('th', { class: 'num', text: 'p99 tail', title: "the factor's share of the p99 tail's excess over the mean" }),
    el('th', { class: 'num', text: 'p99.9 tail' }),
    el('th', { class: 'num', text: 'top 0.1%', title: 'the part of it the largest 0.1% of intervals carry' }),
    el('th', { class: 'num', text: 'height' }), el('th', { class: 'num', text: 'score' })));
  for (const f of fs) {
    const v = factorValue(f);
    const name = el('div', { class: 'factor-name' }, f.kind === 'cov' ? `Cov(${f.functions.join(', ')})` : f.name);
    if (f.fragile) name.appendChild(el('span', { class: 'badge fragile', text: 'fragile',
      title: 'its 95% interval is wider than its value, or one interval carries over half of it; ranked as if its score were half' }));
    if (f.significant === false) name.appendChild(el('span', { class: 'badge ns', text: 'not significant',
      title: 'its 95% interval touches zero' }));
    const cell = el('td', null, name);
    const sites = (f.call_sites || []).filter((c, i) => i === 0 ||
      (Math.abs(paper ? c.contribution : c.share) >= 0.1 * Math.abs(v) && Math.abs(paper ? c.contribution : c.share) >= 0.01)).slice(0, 4);
    sites.forEach((c, i) => cell.appendChild(el('div', { class: 'via' }, i ? 'and ' : 'via ',
      c.call_site ? loc(c.call_site) : 'no call site', ` (${pct(paper ? c.contribution : c.share)})`,
      c.parent_call_site && sites.length > 1 ? el('span', null, ' from ', loc(c.parent_call_site)) : null)));
    if (isNum(f.run) && f.run > 0 && isNum(f.run_value))
      cell.appendChild(el('div', { class: 'via', text:
        `interval and tails measured in ${runName(f.run)}, where it is ${pct(f.run_value)}`,
        title: 'its 95% interval, tail shares and top 0.1% are of its value in that run alone' }));
    if (isNum(f.runs_measured) && f.runs_measured > 1)
      cell.appendChild(el('div', { class: 'via', text: `in ${f.runs_measured} runs`,
        title: 'runs that hold it alike; its 95% interval has the spread of its value between them' }));
    const fixed = f.if_fixed || {};
    if (isNum(fixed.variance_change) && isNum(fixed.p99_change)) {
      // As the terminal table says it: Var -48.0% [-55.1%, -40.2%], p99 ...
      const change = (c, ci) => (c > 0 ? '+' : '') + pct(c) +
        (ci ? ` [${ci.map((x) => (x > 0 ? '+' : '') + pct(x)).join(', ')}]` : '');
      cell.appendChild(el('div', { class: 'via if-fixed', text:
        `if fixed: Var ${change(fixed.variance_change, fixed.variance_change_ci95)}, ` +
        `p99 ${change(fixed.p99_change, fixed.p99_change_ci95)}`,
        title: 'the latency\'s variance and p99 with this factor\'s time at its mean in every interval, ' +
          'the rest as measured (a prediction; [95% bootstrap interval])' }));
    }
    const tail = f.tail || {};
    t.appendChild(el('tr', { 'data-rank': f.rank, 'data-name': f.name, 'data-value': v },
      el('td', { text: String(f.rank) }), cell,
      el('td', { class: 'num', text: pct(v) }),
      el('td', null, ciBar(f, v, lo, hi)),
      el('td', { class: 'num', text: pct(tail.p99) }),
      el('td', { class: 'num', text: pct(tail.p999) }),
      el('td', { class: 'num', text: pct(f['top_0.1%']) }),
      el('td', { class: 'num', text: String(f.height) }),
      el('td', { class: 'num', text: isNum(f.score) ? f.score.toFixed(3) : '–' })));
  }
  s.appendChild(t);
  s.appendChild(el('p', { class: 'note', text: (paper
    ? 'contribution = the factor\'s var/2·cov terms over ' + rootName
    : 'share = Cov(factor, L) / Var(L): the shares of parts add up to their whole\'s') +
    '. Bar: the value; line: its 95% bootstrap interval (around the value measured in the run named, for a factor from a later run).' }));
});

// ---------------------------------------------------------------- causes
// A place's own time plus the waits it held up (docs/method.md, "Causes"):
// shown when some wait's blocked time is tiled by its holder's place (else
// the causes are the factors' leaves again).
section('causes', 'Top causes', (s) => {
  const c = doc.causes || {};
  const cs = (c.ranked || []).filter((f) => f.rank > 0);
  if (!c.held || !cs.length) return false;
  s.appendChild(el('p', { class: 'note', text: 'A place with its own time and the waits it held up in other ' +
    'threads\' intervals (through convoys); every part of the variance tree is in one cause or in none ' +
    `(${pct(c.none_share)} in none: outside, untracked, queue waits, preempted, recorder, held outside).` }));
  let lo = 0, hi = 1;
  for (const f of cs) {
    lo = Math.min(lo, f.share, f.ci95 ? f.ci95[0] : 0);
    hi = Math.max(hi, f.share, f.ci95 ? f.ci95[1] : 0);
  }
  const t = el('table', { id: 'cause-table' });
  t.appendChild(el('tr', null, el('th', { text: '#' }), el('th', { text: 'cause' }),
    el('th', { class: 'num', text: 'share' }), el('th', { text: 'share and its 95% interval' }),
    el('th', { class: 'num', text: 'own' }), el('th', { class: 'num', text: 'held up' })));
  for (const f of cs) {
    const cell = el('td', null, el('div', { class: 'factor-name', text: f.name }));
    for (const h of (f.held_up || []).filter((h) => h.share >= 0.005).slice(0, 3))
      cell.appendChild(el('div', { class: 'via' }, `held up ${pct(h.share)} in ${h.wait}`,
        h.call_site ? el('span', null, ' at ', loc(h.call_site)) : null));
    t.appendChild(el('tr', { 'data-rank': f.rank, 'data-name': f.name, 'data-value': f.share },
      el('td', { text: String(f.rank) }), cell,
      el('td', { class: 'num', text: pct(f.share) }),
      el('td', null, ciBar(f, f.share, lo, hi)),
      el('td', { class: 'num', text: pct(f.own_share) }),
      el('td', { class: 'num', text: pct(f.share - f.own_share) })));
  }
  s.appendChild(t);
});

section('tree', 'Variance tree', (s) => {
  if (!doc.tree) return false;
  s.appendChild(el('p', { class: 'note', text: paper
    ? `Each node's var and 2·cov terms over ${rootName}; the terms under a node add up to it.`
    : `Each part's share of ${rootName}, Cov(part, L)/Var(L); the shares under a node add up to it. ` +
      'Click ▸ to open a node; hover for its full label and the run that measured it.' }));
  s.appendChild(treeView(doc.tree));
  const dis = doc.run_disagreements || [];
  for (const d of dis)
    s.appendChild(el('div', { class: 'warnbox', text:
      `Runs disagree: ${d.node} carries ${pct(d.merged_share)} of Var(root) in the merged tree (${runName(d.from_run)}) ` +
      `but ${pct(d.run_share)} in ${runName(d.run)}; its parts are ${runName(d.run)}'s shares, moved to add up to the merged share.` }));
  const blame = (doc.blame || []).slice(0, 5);
  if (blame.length) {
    s.appendChild(el('h3', { text: 'Blocked on other work (blame)' }));
    const t = el('table', null, el('tr', null, el('th', { class: 'num', text: 'time' }), el('th', { text: 'waiting in' }),
      el('th', { text: 'on' })));
    for (const b of blame)
      t.appendChild(el('tr', null, el('td', { class: 'num', text: dur(b.ns) }), el('td', { class: 'mono', text: b.wait_site }),
        el('td', { class: 'mono', text: `pid ${b.waker_pid} tid ${b.waker_tid} in ${b.waker_function}` +
          (b.waker_interval ? ` (for interval ${b.waker_interval})` : ' (for no interval)') })));
    s.appendChild(t);
  }
});

// -------------------------------------------------------------- by type
// `types` is {within_fraction, between_fraction, by_type: [...]}; an entry
// may carry `tree` (the tree within that type), drawn when present.
section('types', 'By type', (s) => {
  const ty = doc.types;
  if (!ty) return false;
  const entries = Array.isArray(ty) ? ty : (ty.by_type || []);
  if (isNum(ty.within_fraction)) {
    const split = el('div', { class: 'split', id: 'type-split' }, el('div', null), el('div', null));
    const parts = [[ty.within_fraction, '#2f6fdd', `within types ${pct(ty.within_fraction)} — to explain`],
                   [ty.between_fraction, '#9aa4b2', `between types ${pct(ty.between_fraction)} — requested work`]];
    const legend = el('div', { class: 'legend flush' });
    parts.forEach(([f, color, text], i) => {
      split.children[i].style.flex = String(Math.max(f, 0.001));
      split.children[i].style.background = color;
      const sw = el('span', { class: 'swatch' });
      sw.style.background = color;
      legend.appendChild(el('span', null, sw, text));
    });
    s.appendChild(split);
    s.appendChild(legend);
    s.appendChild(el('p', { class: 'note', text:
      'Var(L) = E[Var(L | type)] + Var(E[L | type]): the variance within types is what the tree should explain; between types, work the user asked for.' }));
  }
  const total = entries.reduce((a, t) => a + (t.intervals || 0), 0);
  const t = el('table', null, el('tr', null, el('th', { text: 'type' }), el('th', { class: 'num', text: 'intervals' }),
    el('th', { class: 'num', text: 'of all' }), el('th', { class: 'num', text: 'mean' }), el('th', { class: 'num', text: 'stddev' })));
  entries.forEach((e, i) => {
    t.appendChild(el('tr', { 'data-type': e.type },
      el('td', null, el('span', { class: 'swatch', 'data-color': i }), e.type || '(no type)'),
      el('td', { class: 'num', text: String(e.intervals) }),
      el('td', { class: 'num', text: total ? pct(e.intervals / total) : '–' }),
      el('td', { class: 'num', text: dur(e.mean_ns) }),
      el('td', { class: 'num', text: isNum(e.variance_ns2) ? dur(Math.sqrt(e.variance_ns2)) : '–' })));
  });
  for (const sw of t.querySelectorAll('.swatch')) sw.style.background = PALETTE[+sw.dataset.color % PALETTE.length];
  s.appendChild(t);
  for (const e of entries) {
    if (!e.tree) continue;
    const d = el('details', { class: 'type-tree', 'data-type': e.type },
      el('summary', { text: `The tree within ${e.type || '(no type)'} (shares of the variance within it)` }));
    d.appendChild(treeView(e.tree));
    s.appendChild(d);
  }
});

// ------------------------------------------------------------ by client
section('clients', 'By client', (s) => {
  // `clients` [{client, intervals, share, cv, mean_ns}], `unfairness`,
  // `mean_client_cv`, `unlabeled_client_intervals`: null without client labels.
  const cs = Array.isArray(doc.clients) ? doc.clients : [];
  const u = doc.unfairness;
  if (!cs.length && !isNum(u)) return false;
  if (isNum(u)) {
    s.appendChild(el('p', null, 'Unfairness U', el('sub', { text: 'f' }), ' = max',
      el('sub', { text: 'i' }), ' |N', el('sub', { text: 'i' }), '/φ', el('sub', { text: 'i' }), ' − H| / H = ',
      el('b', { id: 'unfairness', 'data-value': u, text: u.toFixed(3) }),
      el('span', { class: 'muted', text: ' (0 when every client completed as many intervals as the others)' })));
  }
  if (isNum(doc.mean_client_cv))
    s.appendChild(el('p', null, 'Mean per-client coefficient of variation of latency: ',
      el('b', { id: 'mean-client-cv', 'data-value': doc.mean_client_cv, text: doc.mean_client_cv.toFixed(3) })));
  if (doc.unlabeled_client_intervals)
    s.appendChild(el('p', { class: 'note', text: `${doc.unlabeled_client_intervals} intervals without a client label, counted apart.` }));
  if (!cs.length) return;
  const shown = cs.slice().sort((a, b) => (b.intervals || 0) - (a.intervals || 0)).slice(0, 30);
  const t = el('table', { id: 'client-table' }, el('tr', null, el('th', { text: 'client' }),
    el('th', { class: 'num', text: 'intervals' }), el('th', { class: 'num', text: 'share' }), el('th', { text: '' }),
    el('th', { class: 'num', text: 'mean' }), el('th', { class: 'num', text: 'cv' })));
  const maxShare = Math.max(1e-9, ...shown.map((c) => (isNum(c.share) ? c.share : 0)));
  for (const c of shown) {
    const bar = el('span', { class: 'tbar' }, el('span', null));
    bar.firstChild.style.width = (isNum(c.share) ? 180 * c.share / maxShare : 0) + 'px';
    t.appendChild(el('tr', { 'data-client': c.client },
      el('td', { class: 'mono', text: c.client || '(no client)' }), el('td', { class: 'num', text: String(c.intervals) }),
      el('td', { class: 'num', text: pct(c.share) }), el('td', null, bar),
      el('td', { class: 'num', text: dur(c.mean_ns) }), el('td', { class: 'num', text: isNum(c.cv) ? c.cv.toFixed(3) : '–' })));
  }
  s.appendChild(t);
  if (cs.length > shown.length) s.appendChild(el('p', { class: 'note', text: `${cs.length - shown.length} more clients in the JSON.` }));
});

// ------------------------------------------------------------ iterations
section('iterations', 'Refinement path', (s) => {
  if (!iterations.length) return false;
  if (doc.session && doc.session.stop_reason)
    s.appendChild(el('p', null, `${iterations.length} iterations; `, el('b', { text: doc.session.stop_reason }), '.'));
  const t = el('table', { id: 'iteration-table' }, el('tr', null,
    el('th', { class: 'itcell', text: 'iteration: newly instrumented' }), el('th', { text: 'factor' }),
    el('th', { class: 'num', text: quantity }), el('th', { text: 'decision' }), el('th', { class: 'whycell', text: 'why' })));
  let before = new Set();
  for (const it of iterations) {
    const ds = it.decisions || [];
    // Each run instruments the chain up to the root again: show what is new.
    const all = it.instrumented || [];
    const added = all.filter((f) => !before.has(f));
    const kept = all.filter((f) => before.has(f));
    before = new Set(all);
    const head = el('td', { class: 'itcell', rowspan: Math.max(1, ds.length) },
      el('b', { text: String(it.iteration) }), isNum(it.run) ? el('span', { class: 'muted', text: ` (run ${it.run})` }) : ' (not analyzed)',
      el('div', { class: 'chips small' }, added.map((f) => el('span', { text: f }))),
      kept.length ? el('div', { class: 'muted small', title: kept.join('\n'),
                                text: `and ${kept.length} instrumented before` }) : null);
    if (!ds.length) {
      t.appendChild(el('tr', { 'data-iteration': it.iteration }, head, el('td', { colspan: 4, class: 'muted', text: 'no decision recorded' })));
      continue;
    }
    ds.forEach((d, i) => {
      const badge = d.decision === 'break down' ? 'down' : d.decision === 'unreached' ? 'unreached' : 'done';
      t.appendChild(el('tr', { 'data-iteration': it.iteration }, i === 0 ? head : null,
        el('td', { class: 'factor-name' }, d.factor, d.fragile ? el('span', { class: 'badge fragile', text: 'fragile' }) : null),
        el('td', { class: 'num', text: pct(d.value) }),
        el('td', null, el('span', { class: 'badge ' + badge, text: d.decision })),
        el('td', { class: 'small whycell', text: d.reason })));
    });
  }
  s.appendChild(t);
});

// ---------------------------------------------------------- data quality
section('quality', 'Data quality and the measurement floor', (s) => {
  const o = doc.overhead || {};
  const q = doc.data_quality || {};
  const kv = el('div', { class: 'kv', id: 'quality-kv' });
  if (q.level) kv.append(el('span', { class: 'k', text: 'verdict' }), el('span', { class: q.level === 'ok' ? null : 'bad', id: 'quality-level', text: q.level }));
  const add = (k, v, bad, id) => kv.append(el('span', { class: 'k', text: k }), el('span', { class: bad ? 'bad' : null, id, text: v }));
  add('probe pair (measured at start-up)', isNum(o.probe_ns) ? o.probe_ns.toFixed(1) + ' ns' : '–', false, 'probe-ns');
  add('empty interval', isNum(o.empty_interval_ns) ? o.empty_interval_ns.toFixed(1) + ' ns' : '–', false, 'empty-interval-ns');
  add('preemption', isNum(doc.preemption) ? `${pct(doc.preemption)} of ${rootName}, in the (preempted) leaves` : 'not measured');
  add('intervals analyzed', String(doc.intervals));
  add('incomplete intervals', String(doc.incomplete_intervals), doc.incomplete_intervals > 0);
  add('dropped records', String(doc.dropped_records), doc.dropped_records > 0);
  const lost = doc.data_lost || {};
  if (lost.damaged_files) add('damaged trace files', `${lost.damaged_files} of ${lost.trace_files}: ${lost.records} records and ${lost.bytes} bytes not read`, true);
  // Every other counter that is not zero, marked bad unless its level (from the
  // JSON's data_quality.levels) is info (the edges followed are good news).
  const levels = q.levels || {};
  const skip = new Set(['dropped_records', 'incomplete_intervals', 'diagnostics', 'data_lost', 'levels']);
  const quiet = [];
  for (const [k, v] of Object.entries(q)) {
    if (skip.has(k) || typeof v !== 'number') continue;
    if (v === 0) { quiet.push(k); continue; }
    add(k.replace(/_/g, ' '), String(v), levels[k] !== 'info');
  }
  s.appendChild(kv);
  if (quiet.length)
    s.appendChild(el('details', null, el('summary', { text: `${quiet.length} more counters, all zero` }),
      el('p', { class: 'note', text: quiet.map((k) => k.replace(/_/g, ' ')).join(', ') + '.' })));
  for (const d of q.diagnostics || []) s.appendChild(el('div', { class: 'mono small', text: d }));
  const runs = doc.runs || [];
  if (runs.length > 1) {
    s.appendChild(el('h3', { text: 'Runs' }));
    const t = el('table', null, el('tr', null, el('th', { text: 'run' }), el('th', { class: 'num', text: 'intervals' }),
      el('th', { class: 'num', text: 'stddev of the root' }), el('th', { text: 'trace' })));
    for (const r of runs)
      t.appendChild(el('tr', null, el('td', { text: runName(r.run) }), el('td', { class: 'num', text: String(r.intervals) }),
        el('td', { class: 'num', text: isNum(r.variance_ns2) ? dur(Math.sqrt(Math.max(0, r.variance_ns2))) : '–' }),
        el('td', { class: 'mono small', text: r.trace_dir })));
    s.appendChild(t);
  }
});

// Sections with nothing to show leave their link out.
for (const a of document.querySelectorAll('nav a')) if (!document.getElementById(a.dataset.section)) a.remove();
document.body.dataset.render = failed ? 'error' : 'ok';
