#!/usr/bin/env bash
# Loads a `vprof analyze --perfetto` file into Perfetto's trace processor, the
# importer behind ui.perfetto.dev, and prints what it made of it: slices,
# flows, thread tracks, and every error or data-loss counter the import
# raised (an X that overlapped another, a flow with no slice to bind to, a
# line it could not parse). Exit 1 when the import raised any.
#
#   scripts/perfetto-check.sh FILE
#
# Uses, the first it finds: $TRACE_PROCESSOR or trace_processor_shell or
# trace_processor on PATH (the classic `-q QUERY_FILE` interface), else
# python3's `perfetto` package (pip install perfetto; it still needs the
# native binary, and fetches one on first use unless $TRACE_PROCESSOR names
# it). With none of them it prints one line saying it skipped and why, and
# exits 0: Debian packages no trace processor, and the package registries
# this project's machines reach (Debian's, npm) hold none either.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 FILE" >&2
  exit 2
fi
file=$1
if [ ! -r "$file" ] || [ -d "$file" ]; then
  echo "perfetto-check: $file: not a readable file" >&2
  exit 2
fi

# One query: each count on a line of its own, then the counters.
read -r -d '' sql <<'EOF' || true
SELECT 'slices' AS what, COUNT(*) AS n FROM slice
UNION ALL SELECT 'flows', COUNT(*) FROM flow
UNION ALL SELECT 'thread_tracks_with_slices', COUNT(DISTINCT track_id) FROM slice
  WHERE track_id IN (SELECT id FROM thread_track)
UNION ALL SELECT 'critical_slices', COUNT(*) FROM slice WHERE category LIKE '%critical%'
UNION ALL SELECT 'stat:' || name || IFNULL('[' || idx || ']', ''), value FROM stats
  WHERE value > 0 AND severity IN ('error', 'data_losses');
EOF

# The trace processor's CSV ("what","n" rows) as lines; exit 1 if a stat came out.
report() {
  awk -v file="$file" '
    { gsub(/"/, ""); split($0, f, ","); if (f[1] == "what" || f[1] == "") next;
      printf "perfetto-check: %s: %s = %s\n", file, f[1], f[2]; if (f[1] ~ /^stat:/) bad = 1 }
    END { exit bad }'
}

bin=${TRACE_PROCESSOR:-}
if [ -z "$bin" ]; then
  for b in trace_processor_shell trace_processor; do
    if command -v "$b" >/dev/null 2>&1; then bin=$(command -v "$b"); break; fi
  done
fi
if [ -n "$bin" ]; then
  q=$(mktemp)
  trap 'rm -f "$q"' EXIT
  printf '%s\n' "$sql" >"$q"
  "$bin" -q "$q" "$file" | report  # set -o pipefail: either failing fails the check
  exit 0
fi

if python3 -c 'import perfetto.trace_processor' >/dev/null 2>&1; then
  python3 - "$file" "$sql" <<'EOF' | report
import sys
from perfetto.trace_processor import TraceProcessor
try:
    tp = TraceProcessor(trace=sys.argv[1])
except Exception as e:  # no binary and none to fetch: say so, as a skip
    print("perfetto-check: skipped: python3 perfetto could not start trace_processor: %s" % e,
          file=sys.stderr)
    sys.exit(0)
for row in tp.query(sys.argv[2]):
    print("%s,%s" % (row.what, row.n))
tp.close()
EOF
  exit 0
fi

echo "perfetto-check: skipped: no trace processor here (no \$TRACE_PROCESSOR, no trace_processor_shell or trace_processor on PATH, no python3 perfetto package); $file was not loaded"
exit 0
