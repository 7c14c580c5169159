// Symbolizer (symbols.h).
#include "analyzer/names/symbols.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/trace_dir_rules.h"

namespace vprof::analyzer {

struct Symbolizer::Module {
  struct Load {
    uint64_t offset, vaddr, filesz;
  };
  struct Symbol {
    uint64_t addr, size;
    std::string name;  // as in the file (mangled)
  };
  std::vector<Load> loads;
  std::vector<Symbol> symbols;  // functions, by address
};

namespace {

// The whole file, read-only; empty when it cannot be.
struct Mapped {
  const uint8_t *data = nullptr;
  size_t size = 0;
  explicit Mapped(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void *p = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) data = static_cast<const uint8_t *>(p), size = size_t(st.st_size);
    }
    close(fd);
  }
  ~Mapped() {
    if (data) munmap(const_cast<uint8_t *>(data), size);
  }
  bool has(uint64_t off, uint64_t n) const { return data && off <= size && n <= size - off; }
  template <class T>
  const T *at(uint64_t off) const {
    return has(off, sizeof(T)) ? reinterpret_cast<const T *>(data + off) : nullptr;
  }
};

// A 64-bit little-endian ELF file's PT_LOAD segments and function symbols
// (the full table when the file has one, else the dynamic one). Anything
// malformed ends the reading with what was read.
void read_elf(const std::string &path, Symbolizer::Module &m) {
  Mapped f(path);
  const auto *eh = f.at<Elf64_Ehdr>(0);
  if (!eh || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_ident[EI_DATA] != ELFDATA2LSB)
    return;
  for (unsigned i = 0; i < eh->e_phnum; ++i) {
    const auto *ph = f.at<Elf64_Phdr>(eh->e_phoff + uint64_t(i) * eh->e_phentsize);
    if (ph && ph->p_type == PT_LOAD) m.loads.push_back({ph->p_offset, ph->p_vaddr, ph->p_filesz});
  }
  const Elf64_Shdr *symtab = nullptr, *dynsym = nullptr;
  auto section = [&](unsigned i) { return f.at<Elf64_Shdr>(eh->e_shoff + uint64_t(i) * eh->e_shentsize); };
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    const Elf64_Shdr *sh = section(i);
    if (sh && sh->sh_type == SHT_SYMTAB) symtab = sh;
    if (sh && sh->sh_type == SHT_DYNSYM) dynsym = sh;
  }
  const Elf64_Shdr *table = symtab ? symtab : dynsym;
  if (!table || table->sh_entsize != sizeof(Elf64_Sym) || !f.has(table->sh_offset, table->sh_size)) return;
  const Elf64_Shdr *strings = section(table->sh_link);
  if (!strings || !f.has(strings->sh_offset, strings->sh_size)) return;
  const char *str = reinterpret_cast<const char *>(f.data + strings->sh_offset);
  const uint64_t n = table->sh_size / sizeof(Elf64_Sym);
  for (uint64_t i = 0; i < n; ++i) {
    const auto *s = f.at<Elf64_Sym>(table->sh_offset + i * sizeof(Elf64_Sym));
    if (!s || ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_value == 0 || s->st_name >= strings->sh_size)
      continue;
    const char *name = str + s->st_name;
    const size_t len = strnlen(name, strings->sh_size - s->st_name);
    if (len) m.symbols.push_back({s->st_value, s->st_size, std::string(name, len)});
  }
  std::sort(m.symbols.begin(), m.symbols.end(),
            [](const Symbolizer::Module::Symbol &a, const Symbolizer::Module::Symbol &b) {
              return a.addr < b.addr || (a.addr == b.addr && a.size > b.size);
            });
}

std::string demangle(const std::string &mangled) {
  int status = 0;
  char *d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (!d) return mangled;  // a C function (or a name it cannot read)
  std::string out(d);
  std::free(d);
  return out;
}

// A lambda's body is its function's: "F(int)::{lambda()#1}::operator()()
// const" is F(int)'s (a selection cannot name a lambda, and a function whose
// body a build ahead writes twice runs its instrumented copy in one:
// LevelDB's holders were "CondVar::Wait()::{lambda()#1}::operator()").
// Only at the outermost level: a lambda among template arguments
// (std::_Function_handler<void (), F()::{lambda()#1}>::_M_invoke) is not.
std::string without_lambda(std::string s) {
  static const std::string lambda = "::{lambda(";
  int angle = 0, paren = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++angle;
    else if (c == '>') --angle;
    else if (c == '(') ++paren;
    else if (c == ')') --paren;
    else if (c == ':' && angle == 0 && paren == 0 && s.compare(i, lambda.size(), lambda) == 0) {
      s.erase(i);
      break;
    }
  }
  return s;
}

// A name an older analysis kept, from before a lambda's body was its
// function's: "F()::{lambda()#1}::operator()" is F's (parameters already gone
// but F's own, which function_name_of takes off again).
std::string kept_name(const std::string &f) {
  const std::string w = without_lambda(f);
  return w.size() == f.size() ? f : function_name_of(w);
}

}  // namespace

std::string function_name_of(const std::string &demangled) {
  std::string s = without_lambda(demangled);
  // GCC's local clones: " [clone .cold]", " [clone .part.0]", possibly several.
  for (size_t c; (c = s.find(" [clone ")) != std::string::npos;) s.erase(c);
  // A C symbol with a clone suffix not demangled: "f.part.0", "f.cold".
  if (s.find('(') == std::string::npos) {
    size_t dot = s.find('.');
    return dot == std::string::npos || dot == 0 ? s : s.substr(0, dot);
  }
  // The parameter list: the last top-level "( ... )", with what follows it
  // (const, &, ->...). Parentheses inside template arguments or
  // "(anonymous namespace)" sit inside <> or before it.
  int depth = 0;
  size_t open = std::string::npos;
  for (size_t i = s.size(); i-- > 0;) {
    const char c = s[i];
    if (c == ')') ++depth;
    else if (c == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string::npos || open == 0) return s;
  s.erase(open);
  // A return type (function templates): the part after the last space at
  // template depth 0, unless that space is inside "operator X".
  int angle = 0, paren = 0;
  for (size_t i = s.size(); i-- > 0;) {
    const char c = s[i];
    if (c == '>') ++angle;
    else if (c == '<') --angle;
    else if (c == ')') ++paren;
    else if (c == '(') --paren;
    else if (c == ' ' && angle == 0 && paren == 0) {
      if (s.compare(0, i, "operator") == 0 || (i >= 8 && s.compare(i - 8, 8, "operator") == 0)) continue;
      return s.substr(i + 1);
    }
  }
  return s;
}

Symbolizer::Symbolizer(std::string trace_dir) : dir_(std::move(trace_dir)) {}
Symbolizer::~Symbolizer() = default;

const std::vector<Symbolizer::Mapping> &Symbolizer::maps(uint32_t pid) {
  auto [it, fresh] = maps_.try_emplace(pid);
  if (!fresh) return it->second;
  std::ifstream in(dir_ + "/p-" + std::to_string(pid) + ".maps");
  std::string line;
  while (std::getline(in, line)) {
    // start-end perms offset dev inode path
    uint64_t start = 0, end = 0, offset = 0, inode = 0;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %" SCNu64 " %n", &start, &end, perms,
                    &offset, &inode, &path_at) < 5 ||
        path_at <= 0 || size_t(path_at) >= line.size() || line[size_t(path_at)] != '/')
      continue;
    std::string path = line.substr(size_t(path_at));
    const std::string deleted = " (deleted)";
    if (path.size() > deleted.size() && path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0)
      path.resize(path.size() - deleted.size());
    it->second.push_back({start, end, offset, inode, path});
  }
  return it->second;
}

const Symbolizer::Module *Symbolizer::module(const Mapping &mp) {
  auto [it, fresh] = modules_.try_emplace(mp.path + "\n" + std::to_string(mp.inode));
  if (fresh) {
    it->second = std::make_unique<Module>();
    // The very file the process mapped, not one rebuilt in its place since.
    struct stat st {};
    if (stat(mp.path.c_str(), &st) == 0 && (mp.inode == 0 || uint64_t(st.st_ino) == mp.inode))
      read_elf(mp.path, *it->second);
  }
  return it->second.get();
}

std::string Symbolizer::function(uint32_t pid, uint64_t pc) {
  for (const Mapping &mp : maps(pid)) {
    if (pc < mp.start || pc >= mp.end) continue;
    const Module *m = module(mp);
    const uint64_t file_offset = pc - mp.start + mp.offset;
    for (const Module::Load &l : m->loads) {
      if (file_offset < l.offset || file_offset >= l.offset + l.filesz) continue;
      const uint64_t vaddr = file_offset - l.offset + l.vaddr;
      auto after = std::upper_bound(m->symbols.begin(), m->symbols.end(), vaddr,
                                    [](uint64_t a, const Module::Symbol &s) { return a < s.addr; });
      // The innermost symbol covering it: the nearest start at or below it
      // whose size reaches it (a few steps back past aliases and ends).
      for (int k = 0; k < 8 && after != m->symbols.begin(); ++k) {
        --after;
        if (vaddr >= after->addr + std::max<uint64_t>(after->size, 1)) continue;
        // Of aliases at one address (libc's write and __write), the name
        // with the fewest leading underscores: the one programs call.
        auto underscores = [](const std::string &n) { return n.find_first_not_of('_'); };
        auto best = after;
        for (auto a = after; a != m->symbols.begin() && std::prev(a)->addr == after->addr;) {
          --a;
          if (underscores(a->name) < underscores(best->name)) best = a;
        }
        return function_name_of(demangle(best->name));
      }
      return "";
    }
    return "";
  }
  return "";
}

std::vector<NamedPlace> load_places(const std::string &trace_dir, std::string *why) {
  std::vector<NamedPlace> out;
  const std::string path = trace_dir + "/places.json";
  // Never through a link, never a FIFO (it would hang), and only a file of
  // this user's or root's: names another user wrote would be read as the
  // program's (trace_dir_rules.h).
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | tracedir::kReopen);
  if (fd < 0) {
    if (errno != ENOENT && why) *why = fmt::format("{}: {}; not read", path, std::strerror(errno));
    return out;
  }
  struct stat st {};
  const char *foreign = fstat(fd, &st) == 0 ? tracedir::foreign_file(st) : "cannot be read";
  std::string text;
  if (!foreign) {
    char buf[65536];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  }
  close(fd);
  if (foreign) {
    if (why) *why = fmt::format("{}: {}: not a file an analysis of yours made; not read", path, foreign);
    return out;
  }
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    for (const auto &p : j.at("places"))
      out.push_back({p.at("pid").get<uint32_t>(), p.at("pc").get<uint64_t>(),
                     kept_name(p.at("function").get<std::string>())});
  } catch (const std::exception &) {
    out.clear();  // damaged: named again from the binaries, where they still are
  }
  return out;
}

bool save_places(const std::string &trace_dir, const std::vector<NamedPlace> &places) {
  const std::string path = trace_dir + "/places.json";
  if (access(path.c_str(), F_OK) == 0) return false;
  // A temporary of this writer's own: two analyses of one trace at once
  // must not write into one file.
  const std::string tmp = path + "." + std::to_string(getpid()) + ".tmp";
  nlohmann::json j;
  j["places"] = nlohmann::json::array();
  for (const auto &p : places) j["places"].push_back({{"pid", p.pid}, {"pc", p.pc}, {"function", p.function}});
  {
    // New (O_EXCL, no link followed): never a file another user put there.
    const int fd = open(tmp.c_str(), O_WRONLY | tracedir::kCreate, 0644);
    if (fd < 0) return false;
    const std::string text = j.dump() + "\n";
    const bool written = write(fd, text.data(), text.size()) == ssize_t(text.size());
    if (close(fd) != 0 || !written) {
      unlink(tmp.c_str());
      return false;
    }
  }
  // Not over a file another analysis wrote meanwhile: link fails if it exists.
  const bool ok = link(tmp.c_str(), path.c_str()) == 0;
  unlink(tmp.c_str());
  return ok;
}

}  // namespace vprof::analyzer
