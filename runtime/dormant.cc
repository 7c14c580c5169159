// VPROF_DORMANT: the probes a run leaves dormant (probes.h), read once at
// start-up into the two bit arrays the inline tests read.
#include "dormant.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <vprof/probes.h>

unsigned char vprof_rt_dormant_fns[VPROF_DORMANT_IDS / 8];
unsigned char vprof_rt_dormant_sites[VPROF_DORMANT_IDS / 8];

namespace vprof::rt {

// One line: "f ID" or "s ID", ID decimal in [1, VPROF_DORMANT_IDS). Returns
// false with `why` set on anything else.
static bool take_line(const char *line, size_t len, char *why, size_t why_len) {
  if (len == 0) return true;
  unsigned char *bits = line[0] == 'f' ? vprof_rt_dormant_fns : line[0] == 's' ? vprof_rt_dormant_sites : nullptr;
  unsigned long long id = 0;
  size_t i = 2;
  bool digits = len > 2 && line[1] == ' ';
  for (; digits && i < len; ++i) {
    if (line[i] < '0' || line[i] > '9' || id >= VPROF_DORMANT_IDS) {
      digits = false;
      break;
    }
    id = id * 10 + unsigned(line[i] - '0');
  }
  if (!bits || !digits || id == 0 || id >= VPROF_DORMANT_IDS) {
    snprintf(why, why_len, "the line \"%.*s\" is not \"f ID\" or \"s ID\" with an id below %u", int(len > 40 ? 40 : len),
             line, VPROF_DORMANT_IDS);
    return false;
  }
  bits[id >> 3] |= (unsigned char)(1u << (id & 7));
  return true;
}

bool load_dormant(const char *path, char *why, size_t why_len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, why_len, "cannot open it: %s", strerror(errno));
    return false;
  }
  char buf[65536];
  char line[64];
  size_t used = 0;
  bool ok = true, long_line = false;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      snprintf(why, why_len, "cannot read it: %s", strerror(errno));
      ok = false;
      break;
    }
    for (ssize_t i = 0; i < n && ok; ++i) {
      if (buf[i] == '\n') {
        ok = !long_line && take_line(line, used, why, why_len);
        if (long_line) snprintf(why, why_len, "a line is longer than an id's");
        used = 0;
        long_line = false;
      } else if (used < sizeof line) {
        line[used++] = buf[i];
      } else {
        long_line = true;
      }
    }
    if (!ok || n == 0) break;
  }
  if (ok && (used > 0 || long_line)) {  // a last line with no newline
    ok = !long_line && take_line(line, used, why, why_len);
    if (long_line) snprintf(why, why_len, "a line is longer than an id's");
  }
  close(fd);
  if (!ok) {  // nothing half-read stays dormant: the caller turns recording off
    memset(vprof_rt_dormant_fns, 0, sizeof vprof_rt_dormant_fns);
    memset(vprof_rt_dormant_sites, 0, sizeof vprof_rt_dormant_sites);
  }
  return ok;
}

}  // namespace vprof::rt
