// The loops of probe_bench_dormant.cc: probes with the dormant test.
#ifndef VPROF_TESTS_BENCH_PROBE_BENCH_DORMANT_H
#define VPROF_TESTS_BENCH_PROBE_BENCH_DORMANT_H

#include <cstdint>

// The ids the recording child leaves dormant (VPROF_DORMANT), and a site it
// records.
constexpr uint32_t kDormantId = 5;
constexpr uint32_t kRecordedSite = 9;

// n pairs of site kRecordedSite, recorded.
void dormant_capable_sites(uint32_t n);
// n calls: site kDormantId around function kDormantId, all four dormant.
void dormant_call(uint32_t n);

#endif
