#!/usr/bin/env python3
"""The HTML report of a real session, in a real browser.

Runs `vprof iterate --auto` on a copy of examples/minidb in the demo's
contended configuration (300 transactions and 2 iterations where the demo has
1000 and 6, and an unoptimized build, to stay under a minute on a loaded
2-core machine), then `vprof analyze --json --html` on its traces, and opens
both pages (analyze's report.html and the session's final-report.html) in
headless Chromium (browser_check.py, the DevTools protocol on a pipe):
  - no console error, no uncaught exception, no browser error or warning;
  - no network request at all (and the page's policy forbids any);
  - the top factor and the p99 the page rendered are the JSON report's;
  - the embedded document is the JSON report, key for key;
  - the refinement path lists every decision of the session.
It first shows the checker can fail: a page with a console error and a request
is caught, and the report with an <img> slipped in has it blocked and reported.
A screenshot of the session's page is left in ARTIFACTS/report.png.

Exit 77 (ctest: skipped) when Chromium is not installed; scripts/setup.sh
installs it.

Usage: html_report_test.py VPROF MINIDB_SOURCE_DIR ARTIFACTS_DIR
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import browser_check  # noqa: E402

ITERATIONS = 2
TXNS = 300

failures = []
checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        print(f"command failed ({r.returncode}): {' '.join(map(str, cmd))}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        sys.exit(1)
    return r


def embedded(page_text):
    m = re.search(r'<script type="application/json" id="vprof-data">(.*?)</script>', page_text, re.S)
    return json.loads(m.group(1)) if m else None


def dur(ns):
    """The page's duration format (report.js dur())."""
    a = abs(ns)
    if a >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if a >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if a >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


# What the test reads from a rendered page.
DOM = """JSON.stringify({
  render: document.body.dataset.render,
  errors: [...document.querySelectorAll('.render-error')].map(e => e.textContent),
  top: (e => e && {name: e.dataset.name, value: e.dataset.value, text: e.textContent})(document.getElementById('top-factor')),
  p99: (e => e && {ns: e.dataset.ns, text: e.textContent})(document.getElementById('p99')),
  factorRows: [...document.querySelectorAll('#factor-table tr[data-rank]')].map(r => r.dataset.name),
  histogramBars: document.querySelectorAll('#histogram rect').length,
  percentileLines: [...document.querySelectorAll('#histogram text.plabel')].map(t => t.textContent),
  treeRows: document.querySelectorAll('#tree .trow').length,
  decisionRows: document.querySelectorAll('#iteration-table tr[data-iteration]').length,
  sections: [...document.querySelectorAll('main > section')].map(s => s.id),
})"""


def static_checks(name, page_text, doc):
    check('content="default-src \'none\';' in page_text, f"{name}: a CSP of default-src 'none'")
    urls = set(re.findall(r"https?://[^\s\"'<>)]*", page_text))
    check(urls <= {"http://www.w3.org/2000/svg"}, f"{name}: addresses in the page: {sorted(urls)}")
    check(embedded(page_text) == doc, f"{name}: the embedded document is the JSON report")


def browser_checks(name, result, doc):
    check(result["errors"] == [], f"{name}: console/browser errors: {result['errors']}")
    check(result["requests"] == [] and result["blocked"] == [],
          f"{name}: network requests: {result['requests']}, blocked: {result['blocked']}")
    d = json.loads(result["dom"]) if isinstance(result["dom"], str) else {}
    check(d.get("render") == "ok" and not d.get("errors"), f"{name}: rendered: {d.get('render')} {d.get('errors')}")
    top = next((f for f in doc["factors"] if f["rank"] == 1), None)
    check(top is not None, f"{name}: the JSON has a top factor")
    if top and d.get("top"):
        ranked = top["contribution"] if doc["selection"]["ranked_by"] == "contribution" else top["share"]
        check(d["top"]["name"] == top["name"] and d["top"]["text"] == top["name"],
              f"{name}: top factor on the page {d['top']} vs JSON {top['name']}")
        check(float(d["top"]["value"]) == ranked, f"{name}: top factor value {d['top']['value']} vs {ranked}")
    p99 = doc["latency"]["p99_ns"]
    if d.get("p99"):
        check(float(d["p99"]["ns"]) == p99, f"{name}: p99 {d['p99']['ns']} vs JSON {p99}")
        check(d["p99"]["text"] == dur(p99), f"{name}: p99 shown as {d['p99']['text']!r}, want {dur(p99)!r}")
    else:
        check(False, f"{name}: no #p99 on the page")
    check(d.get("factorRows") == [f["name"] for f in doc["factors"] if f["rank"] > 0],
          f"{name}: factor rows {d.get('factorRows')}")
    check(d.get("histogramBars", 0) > 0, f"{name}: histogram bars drawn")
    check(d.get("percentileLines") == ["p50", "p90", "p99", "p99.9"], f"{name}: percentiles {d.get('percentileLines')}")
    check(d.get("treeRows", 0) > 1, f"{name}: tree rows {d.get('treeRows')}")
    for s in ("summary", "distribution", "factors", "tree", "types", "quality"):
        check(s in d.get("sections", []), f"{name}: section {s} in {d.get('sections')}")
    return d


def main():
    vprof, minidb_src, artifacts = (str(pathlib.Path(p).resolve()) for p in sys.argv[1:4])
    chromium = browser_check.find_chromium()
    if not chromium:
        print("SKIPPED: chromium not found; the HTML report is not checked in a browser "
              "(apt-get install chromium, as scripts/setup.sh does)")
        return 77
    start = time.monotonic()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="vprof-html-"))
    browser = None
    try:
        # A real session on the demo's engine.
        tree = tmp / "minidb"
        shutil.copytree(minidb_src, tree)
        inc = run([vprof, "config", "--include-dir"]).stdout.strip()
        lib = run([vprof, "config", "--lib-dir"]).stdout.strip()
        run(["cmake", "-S", tree, "-B", tree / "b", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=None",
             f"-DVPROF_INCLUDE_DIR={inc}", f"-DVPROF_LIB_DIR={lib}"])
        run([vprof, "init", "-p", "b", "--root", "minidb::run_transaction", "--build", "cmake --build b",
             "--run", f"./b/minidb_bench --preset contended --lock-policy fcfs --txns {TXNS} --dir {tmp}/data",
             "--sync", "stdcxx", "--force"], cwd=tree)
        run([vprof, "iterate", "--auto", "--fresh", "--max-iterations", str(ITERATIONS)], cwd=tree)
        session = tree / ".vprof-session"
        print(f"session: {time.monotonic() - start:.0f} s", flush=True)

        # The same traces through vprof analyze.
        traces = sorted(session.glob("iter-*/trace"), key=lambda p: int(p.parent.name.split("-")[1]))
        # keep_traces false (the default): each run but the last is its
        # summary alone, which vprof analyze reads; what needs the trace
        # says so in one line.
        check(all((t / "run.summary").is_file() and not list(t.glob("*.vpt")) for t in traces[:-1])
              and list(traces[-1].glob("*.vpt")), "session: the earlier runs' traces deleted, the last kept")
        refused = subprocess.run([vprof, "analyze", traces[0], "--perfetto", tmp / "p.json"],
                                 capture_output=True, text=True)
        check(refused.returncode == 2 and refused.stderr.count("\n") == 1
              and "its trace files were deleted" in refused.stderr and not (tmp / "p.json").exists(),
              f"analyze --perfetto of a summarized run: exit {refused.returncode}, {refused.stderr!r}")
        report_json, report_html = tmp / "report.json", tmp / "report.html"
        run([vprof, "analyze", "--root", "minidb::run_transaction", *traces,
             "--json", report_json, "--html", report_html])
        doc = json.loads(report_json.read_text())
        page = report_html.read_text()
        static_checks("analyze", page, doc)
        print(f"report.html: {len(page.encode())} bytes; report.json: {report_json.stat().st_size} bytes")

        final_doc = json.loads((session / "final-report.json").read_text())
        final_page = (session / "final-report.html").read_text()
        static_checks("iterate", final_page, final_doc)
        decisions = sum(len(it["decisions"]) for it in final_doc.get("iterations", []))
        check(len(final_doc.get("iterations", [])) == ITERATIONS and decisions > 0,
              f"iterate: {ITERATIONS} iterations with decisions in final-report.json")

        browser = browser_check.Browser(chromium)
        # The checker must see what it is there to see.
        probe = tmp / "probe.html"
        probe.write_text('<!DOCTYPE html><p>probe</p><img src="http://127.0.0.1:9/probe.png">'
                         '<script>console.error("planted error")</script>')
        r = browser.open(probe)
        check(any("planted error" in e for e in r["errors"]), f"checker sees a console error: {r['errors']}")
        check(any("127.0.0.1:9" in u for u in r["requests"]), f"checker sees a request: {r['requests']}")
        slipped = tmp / "slipped.html"
        slipped.write_text(page.replace("</body>", '<img src="http://127.0.0.1:9/slipped.png"></body>'))
        r = browser.open(slipped)
        check(r["requests"] == [] and any("slipped.png (csp)" in b for b in r["blocked"]),
              f"the page's policy blocks an <img>: requests {r['requests']}, blocked {r['blocked']}")
        check(any("Content Security Policy" in e for e in r["errors"]),
              f"a blocked load is reported as an error: {r['errors']}")

        # The keys the per-type trees and per-client fairness add
        # (types.by_type[].tree, clients, unfairness, mean_client_cv),
        # hand-made here in their shape, drawn when present.
        extra = json.loads(json.dumps(doc))
        for t in extra["types"]["by_type"]:
            t["tree"] = doc["tree"]
        extra["clients"] = [{"client": f"conn-{i}", "intervals": 100 - 10 * i, "share": (100 - 10 * i) / 450,
                             "cv": 0.5 + i / 10, "mean_ns": 1e6 * (i + 1)} for i in range(5)]
        extra.update(unfairness=0.3333333333333333, mean_client_cv=0.7, unlabeled_client_intervals=3)
        data = json.dumps(extra).replace("<", "\\u003c")
        more = tmp / "more.html"
        more.write_text(re.sub(r'(id="vprof-data">).*?(</script>)', lambda m: m.group(1) + data + m.group(2),
                               page, count=1, flags=re.S))
        r = browser.open(more, expression="""JSON.stringify({
          render: document.body.dataset.render,
          unfairness: document.getElementById('unfairness').dataset.value,
          clients: document.querySelectorAll('#client-table tr[data-client]').length,
          typeTrees: document.querySelectorAll('#types details.type-tree .trow').length,
        })""")
        m = json.loads(r["dom"]) if isinstance(r["dom"], str) else {}
        check(r["errors"] == [] and m.get("render") == "ok", f"types and clients: rendered {m} {r['errors']}")
        check(m.get("unfairness") == "0.3333333333333333" and m.get("clients") == 5,
              f"types and clients: unfairness and clients on the page: {m}")
        check(m.get("typeTrees", 0) >= len(extra["types"]["by_type"]), f"types and clients: a tree per type: {m}")

        # The pages themselves.
        browser_checks("analyze", browser.open(report_html, expression=DOM), doc)
        pathlib.Path(artifacts).mkdir(parents=True, exist_ok=True)
        shot = pathlib.Path(artifacts) / "report.png"
        d = browser_checks("iterate", browser.open(session / "final-report.html", expression=DOM,
                                                   screenshot=shot, width=1280, height=1000,
                                                   full_page=True), final_doc)
        check(d.get("decisionRows") == decisions, f"iterate: {d.get('decisionRows')} decision rows, want {decisions}")
        check("iterations" in d.get("sections", []), "iterate: the refinement path is on the page")
        check(shot.exists() and shot.stat().st_size > 10000, f"screenshot {shot}")
        print(f"screenshot: {shot}")
    finally:
        if browser:
            browser.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{time.monotonic() - start:.0f} s")
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
