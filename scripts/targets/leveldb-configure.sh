# Sourced by scripts/targets/leveldb.sh and scripts/bench-overhead.sh: configure
# Debian's LevelDB (in ./src) with vprof's flags, a compile db and db_bench.
#   leveldb_configure BUILD_DIR TESTS(ON|OFF) [EXTRA_COMPILER_FLAGS]
# Needs $vprof (the vprof binary).
leveldb_configure() {
  local cflags libs
  cflags="$("$vprof" config --cflags) ${3:-}"
  libs=$("$vprof" config --libs)
  cmake -S src -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DLEVELDB_BUILD_TESTS="$2" -DLEVELDB_BUILD_BENCHMARKS=ON \
    -DCMAKE_CXX_FLAGS="$cflags" -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_STANDARD_LIBRARIES="$libs" >/dev/null
}
