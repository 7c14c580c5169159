# Shared by scripts/gate-minidb.sh (CI) and scripts/gate-acceptance.sh: an
# instrumented minidb, and one profiled run of it. Source it with $vprof set.

# The functions both sides are instrumented at: the path from a transaction
# to its row-lock waits and its commit (docs/minidb.md's call structure).
minidb_gate_functions=${FUNCTIONS:-"minidb::run_transaction minidb::execute_step minidb::Database::read_row minidb::Database::write_row minidb::Database::commit minidb::Database::lock_row"}

# minidb_gate_build SRC DEST: builds the minidb sources in SRC (a copy of
# examples/minidb) in DEST/minidb, instrumented by $vprof, with vprof's
# runtime linked. SRC is left alone.
minidb_gate_build() {
  local src=$1 dest=$2
  rm -rf "$dest" && mkdir -p "$dest" && cp -r "$src" "$dest/minidb"
  (cd "$dest/minidb" &&
   cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DVPROF_INCLUDE_DIR="$("$vprof" config --include-dir)" -DVPROF_LIB_DIR="$("$vprof" config --lib-dir)" >/dev/null &&
   cmake --build b >/dev/null &&
   "$vprof" instrument -p b --sync stdcxx --all-files $(for f in $minidb_gate_functions; do echo --function "$f"; done) >/dev/null 2>&1 &&
   cmake --build b >/dev/null)
}

# minidb_gate_run DEST OUT.vprof DATA_DIR [bench flags...]: one run of the
# contended preset under vprof, saved as a profile (the trace is removed).
minidb_gate_run() {
  local dest=$1 out=$2 data=$3
  shift 3
  rm -rf "$out.trace"
  "$vprof" run --trace-dir "$out.trace" -- "$dest/minidb/b/minidb_bench" --preset contended \
    --dir "$data" "$@" >/dev/null 2>&1
  "$vprof" analyze "$out.trace" --bootstrap 0 --save "$out" >/dev/null
  rm -rf "$out.trace"
}
