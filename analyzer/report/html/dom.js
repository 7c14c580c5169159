// vprof HTML report, 1 of 5 (the page's script is dom.js, model.js, charts.js,
// tree.js and report.js, in this order, in one <script>: see
// cmake/vprofEmbedHtml.cmake): building elements and formatting numbers.
'use strict';
const SVG_NS = 'http://www.w3.org/2000/svg';  // an XML namespace name, never fetched

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
