#!/usr/bin/env python3
"""Opens a page in headless Chromium and says what happened there.

The browser is driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: the browser reads commands on fd 3 and writes
answers and events on fd 4, one JSON message each, ended by a NUL byte), so
no port is opened and nothing but the standard library is needed. On the page's
session it enables Runtime, Log, Network and Page, navigates to the file, and
collects:
  - errors: console.error/assert calls, uncaught exceptions, and the browser's
    own error and warning log entries (a Content-Security-Policy violation,
    a failed load);
  - requests: every network request the page made, the document itself aside;
  - blocked: the requests the browser refused to send, with the reason (the
    page's Content-Security-Policy: "csp");
  - dom: what an expression evaluated in the page returned;
  - a PNG screenshot, when asked.

Usage as a program (for a look at a report):
  browser_check.py PAGE.html [--screenshot OUT.png] [--width 1280] [--height 1600]
prints the result as JSON and exits 1 when there was an error or a request,
sent or blocked.
"""
import argparse
import base64
import fcntl
import json
import os
import pathlib
import select
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Browser:
    """One headless Chromium, spoken to over the DevTools pipe."""

    def __init__(self, chromium, timeout=60):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="vprof-chromium-")
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # Out of the way of fds 3 and 4, which the child's dup2 fills.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
                for fd in (to_browser_r, from_browser_w)]
        for fd in (to_browser_r, from_browser_w):
            os.close(fd)
        child_in, child_out = high

        def give_pipes():
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--hide-scrollbars",
                "--mute-audio", "about:blank"]
        self.log = open(os.path.join(self.profile, "chromium.log"), "w+")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log, close_fds=False, preexec_fn=give_pipes)
        os.close(child_in)
        os.close(child_out)
        self.out = to_browser_w
        self.inp = from_browser_r
        self.buf = b""
        self.next_id = 0
        self.events = []

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.out, self.inp):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self.inp], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                self.log.seek(0)
                raise RuntimeError("chromium closed the pipe; its log:\n" + self.log.read()[-3000:])
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.out, data):]
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, session, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        seen = 0
        while True:
            for m in self.events[seen:]:
                if m.get("method") == method and m.get("sessionId") == session:
                    return m
            seen = len(self.events)
            self.events.append(self._read_message(deadline))

    def open(self, path, expression=None, screenshot=None, width=1280, height=1600,
             full_page=False):
        """Loads a file; returns {errors, requests, dom}."""
        url = pathlib.Path(path).resolve().as_uri()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(domain + ".enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        first = len(self.events)
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session)
        dom = None
        if expression:
            r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                          session=session)
            if "exceptionDetails" in r:
                dom = {"evaluate_error": r["exceptionDetails"].get("text")}
            else:
                dom = r["result"].get("value")
        if screenshot:
            params = {"format": "png"}
            if full_page:
                m = self.call("Page.getLayoutMetrics", session=session)
                h = int(m["cssContentSize"]["height"]) + 1
                self.call("Emulation.setDeviceMetricsOverride",
                          {"width": width, "height": h, "deviceScaleFactor": 1, "mobile": False},
                          session=session)
            shot = self.call("Page.captureScreenshot", params, session=session)
            pathlib.Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
        # A last round trip, so events the page sent before it are all in.
        self.call("Runtime.evaluate", {"expression": "1"}, session=session)
        errors, requests, request_ids, blocked_ids = [], [], {}, {}
        for m in self.events[first:]:
            if m.get("sessionId") != session:
                continue
            p = m.get("params", {})
            if m.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append("console." + p["type"] + ": " +
                              " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m.get("method") == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                errors.append("exception: " + d.get("text", "") + " " +
                              str(d.get("exception", {}).get("description", "")))
            elif m.get("method") == "Log.entryAdded" and p["entry"].get("level") in ("error", "warning"):
                e = p["entry"]
                errors.append(f"log {e.get('level')} ({e.get('source')}): {e.get('text')} {e.get('url', '')}".strip())
            elif m.get("method") == "Network.requestWillBeSent":
                u = p.get("request", {}).get("url", "")
                if u != url:
                    requests.append(u)
                    request_ids[p.get("requestId")] = u
            elif m.get("method") == "Network.loadingFailed" and p.get("blockedReason"):
                blocked_ids[p.get("requestId")] = p["blockedReason"]
        # A request the browser blocked itself (the page's policy: "csp") never
        # left it: listed apart, as blocked, with the reason.
        blocked = [f"{request_ids[i]} ({why})" for i, why in blocked_ids.items() if i in request_ids]
        requests = [u for i, u in request_ids.items() if i not in blocked_ids]
        self.call("Target.closeTarget", {"targetId": target})
        return {"errors": errors, "requests": requests, "blocked": blocked, "dom": dom}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("page")
    ap.add_argument("--screenshot")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=1600)
    ap.add_argument("--full-page", action="store_true")
    ap.add_argument("--expression", help="evaluated in the page; its value is printed as `dom`")
    a = ap.parse_args()
    chromium = find_chromium()
    if not chromium:
        raise SystemExit("chromium not found (apt-get install chromium)")
    b = Browser(chromium)
    try:
        r = b.open(a.page, expression=a.expression, screenshot=a.screenshot, width=a.width,
                   height=a.height, full_page=a.full_page)
    finally:
        b.close()
    print(json.dumps(r, indent=2))
    raise SystemExit(1 if r["errors"] or r["requests"] or r["blocked"] else 0)


if __name__ == "__main__":
    main()
