// vprof HTML report, 4 of 5: the variance tree.
// -------------------------------------------------------- variance tree
// An indented tree: bar width = the node's share (or contribution), parts
// of 1% and more shown, smaller ones behind a "+ N smaller" row; nodes of 5%
// and more start open.
function treeView(root) {
  const box = el('div', { class: 'tree' });
  const W = 180;
  function kids(n) {
    return (n.children || []).filter((c) => isNum(nodeValue(c)))
      .sort((a, b) => Math.abs(nodeValue(b)) - Math.abs(nodeValue(a)));
  }
  function row(n, depth) {
    const v = nodeValue(n);
    const wrap = el('div', { class: 'tnode', 'data-id': n.id });
    const ch = kids(n);
    const open = depth === 0 || Math.abs(v) >= 0.05;
    const tog = el('span', { class: 'tog', text: ch.length ? (open ? '▾' : '▸') : '' });
    const bar = el('span', { class: 'tbar' }, el('span', { class: v < 0 ? 'neg' : null }));
    bar.firstChild.style.width = Math.min(W, Math.abs(v) * W) + 'px';
    const label = el('span', { class: 'tlabel' }, bareLabel(n.label, n.call_site), loc(n.call_site));
    if (ch.length && isNum(ch[0].run) && (doc.runs || []).length > 1) {
      label.appendChild(el('span', { class: 'badge run', text: 'broken down in ' + runName(ch[0].run),
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
        for (const c of big) sub.appendChild(row(c, depth + 1));
      };
      if (small.length) {
        const sum = small.reduce((a, c) => a + nodeValue(c), 0);
        const more = el('span', { class: 'tmore', text: `+${small.length} under 1%`,
                                  title: `${small.length} more parts, each under 1%, ${pct(sum)} together: click to list them` });
        more.addEventListener('click', (ev) => {
          ev.stopPropagation();
          build();
          more.remove();
          for (const c of small) sub.appendChild(row(c, depth + 1));
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
  box.appendChild(row(root, 0));
  return box;
}
