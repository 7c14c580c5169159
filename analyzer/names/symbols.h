// Names an address in a recorded process by the function around it: the
// process's p-<pid>.maps (trace_format.h: the executable lines of its
// /proc/self/maps) says which file and offset the address is at, and that
// file's ELF symbol table (.symtab, else .dynsym) which function holds it.
// Read when asked, once per process and per file. A file is read where the
// maps say it was, and only if it is still that file (its inode is the one
// the maps name): a binary rebuilt since the recording names nothing, never
// a wrong function. So that a trace keeps its names when its binary is
// rebuilt (an iterate session's next iteration), the first analysis writes
// what it named into the trace, TRACE_DIR/places.json, which later ones read
// first (load_places / save_places).
//
//   Symbolizer s(trace_dir);
//   s.function(pid, pc);  // "buf_page_t::read_complete", or "" when not known
#ifndef VPROF_ANALYZER_NAMES_SYMBOLS_H
#define VPROF_ANALYZER_NAMES_SYMBOLS_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vprof::analyzer {

class Symbolizer {
 public:
  explicit Symbolizer(std::string trace_dir);
  ~Symbolizer();
  // The qualified name of the function holding `pc` in process `pid`,
  // demangled, without its parameters, return type or clone suffix; ""
  // when the process's maps, the file or a symbol covering it is missing.
  std::string function(uint32_t pid, uint64_t pc);

  struct Mapping {
    uint64_t start, end, offset, inode;
    std::string path;
  };
  struct Module;  // a file's loadable segments and function symbols

 private:
  const std::vector<Mapping> &maps(uint32_t pid);
  const Module *module(const Mapping &m);
  std::string dir_;
  std::map<uint32_t, std::vector<Mapping>> maps_;
  std::map<std::string, std::unique_ptr<Module>> modules_;
};

// TRACE_DIR/places.json: {"places": [{"pid", "pc", "function"}]}, the names
// an analysis gave the trace's release places. Load: empty when missing,
// unreadable or refused. Save: written whole (a temporary renamed), never over an
// existing file; false when the directory refuses it (a read-only trace).
struct NamedPlace {
  uint32_t pid;
  uint64_t pc;
  std::string function;
};
// `why`: set when a places.json is there but refused (a link, not a regular
// file, another user's, or a hard link: common/trace_dir_rules.h).
std::vector<NamedPlace> load_places(const std::string &trace_dir, std::string *why = nullptr);
bool save_places(const std::string &trace_dir, const std::vector<NamedPlace> &places);

// A demangled name as the instrumenter's selections spell functions:
// "void ns::f<int>(int) const [clone .cold]" -> "ns::f<int>".
std::string function_name_of(const std::string &demangled);

}  // namespace vprof::analyzer

#endif
