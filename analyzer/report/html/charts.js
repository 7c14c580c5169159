// vprof HTML report, 3 of 5: the latency histogram and the factors' interval bars, in SVG.
const PALETTE = ['#2f6fdd', '#e07b39', '#3a9d5d', '#9b59b6', '#c0392b', '#16a2b8', '#b8860b',
                 '#7f8c8d', '#d35d9a', '#4b6584'];
const PCT_LINES = [['p50', 'p50_ns', '#3a9d5d'], ['p90', 'p90_ns', '#b8860b'],
                   ['p99', 'p99_ns', '#d9480f'], ['p99.9', 'p999_ns', '#a61e4d']];

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
