// vprof HTML report: renders the JSON document embedded in the page
// (#vprof-data, the document `vprof analyze --json` writes, plus `iterations`
// and `session` for an iterate session; docs/analyze.md) with plain DOM and
// inline SVG. Every number on the page is read from that document and only
// formatted here: nothing is recomputed but sums for display.
//
// Elements a test (or a script) may read, kept stable:
//   #top-factor  data-name, data-value (the ranked quantity: share or contribution)
//   #p50 #p90 #p99 #p999 #mean #max   data-ns (the JSON's number, unrounded)
//   #unfairness  data-value      (when the document has `unfairness`)
//   body[data-render]            "ok", or "error" when a section failed to render
//   .render-error                the message of a section that failed
'use strict';
(function () {
  const SVG_NS = 'http://www.w3.org/2000/svg';  // an XML namespace name, never fetched
  const PALETTE = ['#2f6fdd', '#e07b39', '#3a9d5d', '#9b59b6', '#c0392b', '#16a2b8', '#b8860b',
                   '#7f8c8d', '#d35d9a', '#4b6584'];
  const PCT_LINES = [['p50', 'p50_ns', '#3a9d5d'], ['p90', 'p90_ns', '#b8860b'],
                     ['p99', 'p99_ns', '#d9480f'], ['p99.9', 'p999_ns', '#a61e4d']];

  // ---------------------------------------------------------------- helpers
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k === 'onclick') e.addEventListener('click', v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    return put(e, kids);
  }
  // Appends kids, leaving out null/undefined/false (DOM append would print "null").
  function put(parent, ...kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === undefined || k === null || k === false) continue;
      parent.appendChild(typeof k === 'string' || typeof k === 'number' ? document.createTextNode(String(k)) : k);
    }
    return parent;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const isNum = (v) => typeof v === 'number' && isFinite(v);
  // Durations as the terminal table prints them, with µs for us.
  function dur(ns) {
    if (!isNum(ns)) return '–';
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(2) + ' µs';
    return ns.toFixed(0) + ' ns';
  }
  // Axis labels: 1 ns, 10 µs, 100 ms.
  function durShort(ns) {
    const units = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']];
    for (const [f, u] of units) if (ns >= f * 0.999) return +(ns / f).toPrecision(3) + ' ' + u;
    return ns.toPrecision(2) + ' ns';
  }
  // One decimal; a value that rounds to zero prints 0.0%, never -0.0%.
  const pct = (f) => (isNum(f) ? (Math.abs(f) < 0.0005 ? 0 : 100 * f).toFixed(1) + '%' : '–');
  const basename = (p) => String(p).split('/').pop();
  const siteText = (s) => (s ? `${s.file}:${s.line}:${s.column}` : '');
  const siteShort = (s) => (s ? `${basename(s.file)}:${s.line}` : '');
  function loc(s) {
    return s ? el('span', { class: 'loc', title: siteText(s) + '  (' + s.callee + ')', text: siteShort(s) }) : null;
  }
  // A node's label without the "(file:line)" its call site already says.
  function bareLabel(label, site) {
    if (!site) return label;
    const suffix = ` (${site.file}:${site.line})`;
    return label.endsWith(suffix) ? label.slice(0, -suffix.length) : label;
  }

  const doc = JSON.parse(document.getElementById('vprof-data').textContent);
  const rankedBy = (doc.selection && doc.selection.ranked_by) || 'share';
  const paper = rankedBy === 'contribution';
  const iterations = Array.isArray(doc.iterations) ? doc.iterations : [];
  const runIteration = new Map();
  for (const it of iterations) if (isNum(it.run)) runIteration.set(it.run, it.iteration);
  function runName(r) {
    return runIteration.has(r) ? `iteration ${runIteration.get(r)}` : `run ${r}`;
  }
  const factorValue = (f) => (paper || !isNum(f.share) ? f.contribution : f.share);
  const nodeValue = (n) => (paper ? n.contribution : n.share);
  const quantity = paper ? 'contribution' : 'share';
  const rootName = doc.root === 'latency' || !doc.root ? 'Var(latency)' : `Var(${doc.root})`;

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
    for (const [id, t] of [['distribution', 'Latency'], ['factors', 'Top factors'], ['tree', 'Variance tree'],
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

  function histogram(h, byType, logY) {
    const W = 1180, H = 260, ml = 56, mr = 16, mt = 44, mb = 30;
    const e = h.edges_ns, n = h.counts.length;
    const lx0 = Math.log10(e[0]), lx1 = Math.log10(e[n]);
    const x = (v) => ml + (Math.log10(v) - lx0) / (lx1 - lx0) * (W - ml - mr);
    const maxC = Math.max(1, ...h.counts);
    const yv = (c) => (logY ? (c > 0 ? Math.log10(c + 1) / Math.log10(maxC + 1) : 0) : c / maxC);
    const y = (c) => H - mb - yv(c) * (H - mt - mb);
    const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', id: 'histogram',
                           'aria-label': 'latency histogram on a log axis' });
    // Count axis: a few grid lines.
    const ticks = logY ? [1, 10, 100, 1e3, 1e4, 1e5, 1e6].filter((t) => t <= maxC)
                       : niceTicks(maxC, 4);
    for (const t of ticks) {
      g.appendChild(svg('line', { class: 'grid', x1: ml, x2: W - mr, y1: y(t), y2: y(t) }));
      g.appendChild(svg('text', { x: ml - 6, y: y(t) + 4, 'text-anchor': 'end' }, String(t)));
    }
    g.appendChild(svg('text', { x: 12, y: mt + (H - mt - mb) / 2, transform: `rotate(-90 12 ${mt + (H - mt - mb) / 2})`,
                                'text-anchor': 'middle' }, 'intervals'));
    // Bars, stacked by type when there are types.
    const layers = byType.length > 1 ? byType : [{ type: null, counts: h.counts }];
    const base = new Array(n).fill(0);
    layers.forEach((layer, li) => {
      for (let i = 0; i < n; ++i) {
        const c = layer.counts[i];
        if (!c) continue;
        const x0 = x(e[i]) + 0.5, x1 = x(e[i + 1]) - 0.5;
        let y0 = y(base[i] + c), y1 = y(base[i]);
        if (y1 - y0 < 1.5) y0 = y1 - 1.5;  // a bin with a few intervals stays visible
        const r = svg('rect', { x: x0, y: y0, width: Math.max(0.5, x1 - x0), height: y1 - y0,
                                fill: PALETTE[li % PALETTE.length] });
        r.appendChild(svg('title', null, `${durShort(e[i])} – ${durShort(e[i + 1])}: ${c} intervals` +
                                          (layer.type !== null ? ` (${layer.type || 'no type'})` : '')));
        g.appendChild(r);
        base[i] += c;
      }
    });
    // Latency axis: decades labelled, 2..9 ticked.
    g.appendChild(svg('line', { class: 'axis', x1: ml, x2: W - mr, y1: H - mb, y2: H - mb }));
    const fewDecades = lx1 - lx0 < 3;  // then 2x and 5x are labelled too
    for (let d = Math.floor(lx0); d <= Math.ceil(lx1); ++d) {
      for (let m = 1; m < 10; ++m) {
        const v = m * Math.pow(10, d);
        if (v < e[0] * 0.999 || v > e[n] * 1.001) continue;
        const xv = x(v);
        g.appendChild(svg('line', { class: 'axis', x1: xv, x2: xv, y1: H - mb, y2: H - mb + (m === 1 ? 6 : 3) }));
        if (m === 1 || (fewDecades && (m === 2 || m === 5)))
          g.appendChild(svg('text', { x: xv, y: H - mb + 18, 'text-anchor': 'middle' }, durShort(v)));
      }
    }
    // Percentiles: a dashed line each, named at its top; names that would
    // touch go up a row. Their values are in the legend below.
    const l = doc.latency;
    const rowEnd = [];
    for (const [name, key, color] of PCT_LINES) {
      const v = l[key];
      if (!isNum(v) || v <= 0) continue;
      const xv = Math.min(W - mr, Math.max(ml, x(v)));
      let row = 0;
      while (row < rowEnd.length && rowEnd[row] > xv - 34) ++row;
      rowEnd[row] = xv;
      const ty = mt - 4 - 11 * row;
      g.appendChild(svg('line', { class: 'pline', stroke: color, x1: xv, x2: xv, y1: ty + 2, y2: H - mb }));
      const label = svg('g', null);
      label.appendChild(svg('title', null, `${name} ${dur(v)}`));
      label.appendChild(svg('text', { class: 'plabel', x: xv, y: ty - 1, 'text-anchor': 'middle', fill: color,
                                      'data-ns': v }, name));
      g.appendChild(label);
    }
    return g;
  }
  function niceTicks(max, count) {
    const raw = max / count, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
    const out = [];
    for (let t = step; t <= max; t += step) out.push(Math.round(t));
    return out;
  }

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
          `measured in ${runName(f.run)}: ${pct(f.run_value)} there (its interval, tails and top 0.1% are of that value)` }));
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

  function ciBar(f, v, lo, hi) {
    const W = 220, H = 18, pad = 4;
    const x = (u) => pad + (u - lo) / (hi - lo) * (W - 2 * pad);
    const g = svg('svg', { class: 'cibar', viewBox: `0 0 ${W} ${H}`, width: W, height: H });
    g.appendChild(svg('rect', { x: pad, y: 7, width: W - 2 * pad, height: 4, fill: '#f1f3f6' }));
    g.appendChild(svg('rect', { x: Math.min(x(0), x(v)), y: 4, width: Math.abs(x(v) - x(0)), height: 10,
                                fill: v < 0 ? '#c2410c' : '#9db8ef' }));
    g.appendChild(svg('line', { x1: x(0), x2: x(0), y1: 1, y2: H - 1, stroke: '#5f6b7a' }));
    if (f.ci95) {
      const [a, b] = f.ci95, c = f.significant === false ? '#b91c1c' : '#1d2430';
      const mid = isNum(f.run_value) ? f.run_value : v;
      g.appendChild(svg('line', { x1: x(a), x2: x(b), y1: 9, y2: 9, stroke: c, 'stroke-width': 1.5 }));
      for (const u of [a, b]) g.appendChild(svg('line', { x1: x(u), x2: x(u), y1: 4, y2: 14, stroke: c, 'stroke-width': 1.5 }));
      g.appendChild(svg('circle', { cx: x(mid), cy: 9, r: 2.5, fill: c }));
      g.appendChild(svg('title', null, `${pct(v)}; 95% interval [${pct(a)}, ${pct(b)}]`));
    } else {
      g.appendChild(svg('title', null, `${pct(v)}; no interval (--bootstrap 0)`));
    }
    return g;
  }

  // -------------------------------------------------------- variance tree
  // An indented tree: bar width = the node's share (or contribution), parts
  // of 1% and more shown, smaller ones behind a "+ N smaller" row; nodes of 5%
  // and more start open.
  function treeView(root, opts) {
    const box = el('div', { class: 'tree' });
    const W = 180;
    function kids(n) {
      return (n.children || []).filter((c) => isNum(nodeValue(c)))
        .sort((a, b) => Math.abs(nodeValue(b)) - Math.abs(nodeValue(a)));
    }
    function row(n, depth, parentRun) {
      const v = nodeValue(n);
      const wrap = el('div', { class: 'tnode', 'data-id': n.id });
      const ch = kids(n);
      const open = depth === 0 || Math.abs(v) >= 0.05;
      const tog = el('span', { class: 'tog', text: ch.length ? (open ? '▾' : '▸') : '' });
      const bar = el('span', { class: 'tbar' }, el('span', { class: v < 0 ? 'neg' : null }));
      bar.firstChild.style.width = Math.min(W, Math.abs(v) * W) + 'px';
      const label = el('span', { class: 'tlabel' }, bareLabel(n.label, n.call_site), loc(n.call_site));
      if (ch.length && isNum(ch[0].run) && (doc.runs || []).length > 1) {
        label.appendChild(el('span', { class: 'badge run', text: runName(ch[0].run),
          title: `broken down in ${runName(ch[0].run)}: its parts were measured there` }));
      }
      const r = el('div', { class: 'trow' }, tog, bar, el('span', { class: 'tpct', text: pct(v) }), label);
      r.style.paddingLeft = (depth * 18) + 'px';
      r.title = `${n.label}\n${quantity} ${pct(v)}; value ${isNum(n.value_ns2) ? n.value_ns2.toExponential(3) : '–'} ns²` +
                (isNum(n.run) ? `; measured in ${runName(n.run)}` : '');
      wrap.appendChild(r);
      if (ch.length) {
        const sub = el('div', { class: 'tkids' });
        const big = ch.filter((c) => Math.abs(nodeValue(c)) >= 0.01);
        const small = ch.filter((c) => Math.abs(nodeValue(c)) < 0.01);
        let built = false;
        const build = () => {
          if (built) return;
          built = true;
          for (const c of big) sub.appendChild(row(c, depth + 1, n.run));
        };
        if (small.length) {
          const sum = small.reduce((a, c) => a + nodeValue(c), 0);
          const more = el('span', { class: 'tmore', text: `+${small.length} under 1%`,
                                    title: `${small.length} more parts, each under 1%, ${pct(sum)} together: click to list them` });
          more.addEventListener('click', (ev) => {
            ev.stopPropagation();
            build();
            more.remove();
            for (const c of small) sub.appendChild(row(c, depth + 1, n.run));
            sub.hidden = false;
            tog.textContent = '▾';
          });
          label.appendChild(more);
        }
        if (open) build(); else sub.hidden = true;
        tog.addEventListener('click', () => {
          build();
          sub.hidden = !sub.hidden;
          tog.textContent = sub.hidden ? '▸' : '▾';
        });
        wrap.appendChild(sub);
      }
      return wrap;
    }
    box.appendChild(row(root, 0, root.run));
    return box;
  }

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
        `but ${pct(d.run_share)} in ${runName(d.run)}; its parts are ${runName(d.run)}'s fractions scaled to the merged share.` }));
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
      const d = el('details', null, el('summary', { text: `The tree within ${e.type || '(no type)'}` }));
      d.appendChild(treeView(e.tree));
      s.appendChild(d);
    }
  });

  // ------------------------------------------------------------ by client
  section('clients', 'By client', (s) => {
    const cs = Array.isArray(doc.clients) ? doc.clients : [];
    if (!cs.length && !isNum(doc.unfairness) && !(doc.unfairness && typeof doc.unfairness === 'object')) return false;
    const u = doc.unfairness;
    if (isNum(u)) {
      s.appendChild(el('p', null, 'Unfairness U', el('sub', { text: 'f' }), ' = max',
        el('sub', { text: 'i' }), ' |N', el('sub', { text: 'i' }), '/φ', el('sub', { text: 'i' }), ' − H| / H = ',
        el('b', { id: 'unfairness', 'data-value': u, text: u.toFixed(3) })));
    } else if (u && typeof u === 'object') {
      const kv = el('div', { class: 'kv', id: 'unfairness' });
      for (const [k, v] of Object.entries(u))
        kv.append(el('span', { class: 'k', text: k }), el('span', { text: isNum(v) ? String(+v.toPrecision(4)) : JSON.stringify(v) }));
      s.appendChild(kv);
    }
    if (isNum(doc.mean_cv)) s.appendChild(el('p', null, 'Mean per-client coefficient of variation: ', el('b', { text: doc.mean_cv.toFixed(3) })));
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
    const t = el('table', { id: 'iteration-table' }, el('tr', null, el('th', { text: 'iteration' }), el('th', { text: 'factor' }),
      el('th', { class: 'num', text: quantity }), el('th', { text: 'decision' }), el('th', { text: 'why' })));
    for (const it of iterations) {
      const ds = it.decisions || [];
      const head = el('td', { rowspan: Math.max(1, ds.length) },
        el('b', { text: String(it.iteration) }), isNum(it.run) ? el('span', { class: 'muted', text: ` (run ${it.run})` }) : ' (not analyzed)',
        el('div', { class: 'chips small', title: 'instrumented in this run' }, (it.instrumented || []).map((f) => el('span', { text: f }))));
      if (!ds.length) {
        t.appendChild(el('tr', { 'data-iteration': it.iteration }, head, el('td', { colspan: 4, class: 'muted', text: 'no decision recorded' })));
        continue;
      }
      ds.forEach((d, i) => {
        const down = d.decision === 'break down';
        t.appendChild(el('tr', { 'data-iteration': it.iteration }, i === 0 ? head : null,
          el('td', { class: 'factor-name' }, d.factor, d.fragile ? el('span', { class: 'badge fragile', text: 'fragile' }) : null),
          el('td', { class: 'num', text: pct(d.value) }),
          el('td', null, el('span', { class: 'badge ' + (down ? 'down' : 'done'), text: d.decision })),
          el('td', { class: 'small', text: d.reason })));
      });
    }
    s.appendChild(t);
  });

  // ---------------------------------------------------------- data quality
  section('quality', 'Data quality and the measurement floor', (s) => {
    const o = doc.overhead || {};
    const q = doc.data_quality || {};
    const kv = el('div', { class: 'kv', id: 'quality-kv' });
    const add = (k, v, bad, id) => kv.append(el('span', { class: 'k', text: k }), el('span', { class: bad ? 'bad' : null, id, text: v }));
    add('probe pair (measured at start-up)', isNum(o.probe_ns) ? o.probe_ns.toFixed(1) + ' ns' : '–', false, 'probe-ns');
    add('empty interval', isNum(o.empty_interval_ns) ? o.empty_interval_ns.toFixed(1) + ' ns' : '–', false, 'empty-interval-ns');
    add('preemption', isNum(doc.preemption) ? `${pct(doc.preemption)} of ${rootName}, in the (preempted) leaves` : 'not measured');
    add('intervals analyzed', String(doc.intervals));
    add('incomplete intervals', String(doc.incomplete_intervals), doc.incomplete_intervals > 0);
    add('dropped records', String(doc.dropped_records), doc.dropped_records > 0);
    const lost = doc.data_lost || {};
    if (lost.damaged_files) add('damaged trace files', `${lost.damaged_files} of ${lost.trace_files}: ${lost.records} records and ${lost.bytes} bytes not read`, true);
    // Every other counter that is not zero (the edges followed are good news).
    const good = new Set(['wake_edges_followed', 'created_by_edges_followed']);
    const skip = new Set(['dropped_records', 'incomplete_intervals', 'diagnostics', 'data_lost']);
    const quiet = [];
    for (const [k, v] of Object.entries(q)) {
      if (skip.has(k) || typeof v !== 'number') continue;
      if (v === 0) { quiet.push(k); continue; }
      add(k.replace(/_/g, ' '), String(v), !good.has(k));
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
})();
