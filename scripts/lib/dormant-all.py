#!/usr/bin/env python3
"""Every function and call site of a manifest, as a VPROF_DORMANT file
(docs/run.md): the run that reads it leaves every probe dormant.
  scripts/lib/dormant-all.py MANIFEST OUT"""
import json
import sys

m = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as out:
    for f in m["functions"]:
        out.write(f"f {f['id']}\n")
    for s in m["call_sites"]:
        out.write(f"s {s['id']}\n")
