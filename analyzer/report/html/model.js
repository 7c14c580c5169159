// vprof HTML report, 2 of 5: the document the page renders (#vprof-data: the
// JSON report, plus `iterations` and `session` for an iterate session) and the
// quantities every part reads the same way.
const doc = JSON.parse(document.getElementById('vprof-data').textContent);
const rankedBy = (doc.selection && doc.selection.ranked_by) || 'share';
const paper = rankedBy === 'contribution';
const iterations = Array.isArray(doc.iterations) ? doc.iterations : [];
const runIteration = new Map();
for (const it of iterations) if (isNum(it.run)) runIteration.set(it.run, it.iteration);
function runName(r) {
  return runIteration.has(r) ? `iteration ${runIteration.get(r)}` : `run ${r + 1}`;
}
const factorValue = (f) => (paper || !isNum(f.share) ? f.contribution : f.share);
const nodeValue = (n) => (paper ? n.contribution : n.share);
const quantity = paper ? 'contribution' : 'share';
const rootName = doc.root === 'latency' || !doc.root ? 'Var(latency)' : `Var(${doc.root})`;
