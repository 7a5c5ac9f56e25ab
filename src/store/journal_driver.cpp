// The journaling HDF5 file driver (a VFD written against HDF5 1.10's public H5FD API) and the
// journal's format: a 48-byte header {magic, committed size, entry count, body bytes, body
// checksum, header checksum}, then entries {address, length, the old bytes}. The header is
// checked against the body, so a journal torn while it was written is no journal: nothing had
// been overwritten yet.
#include "store/journal_driver.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/campaign_writer.h"
#include "store/checksum.h"

#if !H5_VERSION_GE(1, 10, 0) || H5_VERSION_GE(1, 11, 0)
#error "kevo's journaling HDF5 driver is written for HDF5 1.10 (the H5FD_class_t of 1.10)"
#endif

namespace kevo::store {
namespace {

constexpr uint64_t kMagic = 0x324E524A6F76656Bull;  // "kevoJRN2", little-endian
constexpr size_t kHeaderWords = 6, kHeaderBytes = kHeaderWords * 8;
constexpr haddr_t kMaxAddr = (haddr_t{1} << 62) - 1;

// What use_journal_driver sets on a file access list (a file opened for writing is a writer,
// whatever the mode says).
struct DriverOptions {
  int mode = 0;  // JournalMode
  int durable = 1;
};

// ---- the crash-test hook and plain POSIX I/O -----------------------------------------------------

std::atomic<int64_t> g_kill_at{0}, g_operations{0};

// Counts a file operation; the one the test chose is replaced by SIGKILL.
void operation() {
  const int64_t n = ++g_operations;
  const int64_t at = g_kill_at.load();
  if (at > 0 && n == at) ::raise(SIGKILL);
}

bool write_all(int fd, const void* buf, size_t n, off_t at) {
  operation();
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
    at += w;
  }
  return true;
}

// Reads n bytes at `at`; what lies past the end of the file reads as zeros.
bool read_all(int fd, void* buf, size_t n, off_t at) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, at);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) {
      std::memset(p, 0, n);
      return true;
    }
    p += r;
    n -= static_cast<size_t>(r);
    at += r;
  }
  return true;
}

bool sync_fd(int fd) {
  operation();
  return ::fsync(fd) == 0;
}

bool truncate_fd(int fd, haddr_t size) {
  operation();
  return ::ftruncate(fd, static_cast<off_t>(size)) == 0;
}

bool sync_folder_of(const std::string& path) {
  std::string folder = std::filesystem::path(path).parent_path().string();
  int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool good = sync_fd(fd);
  ::close(fd);
  return good;
}

// flock, retried when interrupted; filesystems without locks (some network ones) go unlocked.
void lock(int fd, int how) {
  while (::flock(fd, how) != 0 && errno == EINTR) {
  }
}

bool read_whole_file(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool good = ::fstat(fd, &st) == 0;
  if (good) {
    out.resize(static_cast<size_t>(st.st_size));
    good = read_all(fd, out.data(), out.size(), 0);
  }
  ::close(fd);
  return good;
}

// ---- the journal ----------------------------------------------------------------------------------

uint64_t header_sum(const uint64_t* w) {
  Checksum s(0x6A6F75726E616C32ull);  // "journal2"
  for (size_t i = 0; i + 1 < kHeaderWords; ++i) s.add(w[i]);
  return s.value();
}

// Old bytes by address (disjoint ranges).
using Ranges = std::map<haddr_t, std::string>;

// A journal's contents; `committed` is -1 when it is not a whole journal.
struct Journal {
  int64_t committed = -1;
  Ranges old;
};

Journal parse_journal(const std::string& text) {
  Journal j;
  uint64_t w[kHeaderWords];
  if (text.size() < kHeaderBytes) return j;
  std::memcpy(w, text.data(), kHeaderBytes);
  if (w[0] != kMagic || w[5] != header_sum(w) || w[3] != text.size() - kHeaderBytes) return j;
  Checksum body;
  body.add_bytes(text.data() + kHeaderBytes, text.size() - kHeaderBytes);
  if (body.value() != w[4]) return j;
  Ranges old;
  size_t at = kHeaderBytes;
  for (uint64_t e = 0; e < w[2]; ++e) {
    if (text.size() - at < 16) return j;
    uint64_t head[2];
    std::memcpy(head, text.data() + at, 16);
    if (head[1] > text.size() - at - 16) return j;
    old[head[0]] = text.substr(at + 16, head[1]);
    at += 16 + head[1];
  }
  j.committed = static_cast<int64_t>(w[1]);
  j.old = std::move(old);
  return j;
}

std::string journal_text(haddr_t committed, const Ranges& old) {
  std::string body;
  for (const auto& [addr, bytes] : old) {
    const uint64_t head[2] = {addr, bytes.size()};
    body.append(reinterpret_cast<const char*>(head), 16);
    body += bytes;
  }
  Checksum sum;
  sum.add_bytes(body.data(), body.size());
  uint64_t w[kHeaderWords] = {kMagic, committed, old.size(), body.size(), sum.value(), 0};
  w[5] = header_sum(w);
  return std::string(reinterpret_cast<const char*>(w), kHeaderBytes) + body;
}

// Copies the parts of `ranges` that overlap [addr, addr + size) into `buf` (which starts at addr).
void overlay(const Ranges& ranges, haddr_t addr, size_t size, char* buf) {
  auto it = ranges.upper_bound(addr);
  if (it != ranges.begin()) --it;
  for (; it != ranges.end() && it->first < addr + size; ++it) {
    const haddr_t lo = std::max(addr, it->first), hi = std::min<haddr_t>(addr + size, it->first + it->second.size());
    if (lo < hi) std::memcpy(buf + (lo - addr), it->second.data() + (lo - it->first), hi - lo);
  }
}

// Puts [addr, addr + n) into `ranges`, over what they held there, merging touching ranges.
void put(Ranges& ranges, haddr_t addr, const char* p, size_t n) {
  if (n == 0) return;
  haddr_t lo = addr, hi = addr + n;
  auto first = ranges.upper_bound(addr);
  if (first != ranges.begin() && std::prev(first)->first + std::prev(first)->second.size() >= addr) --first;
  auto last = first;
  while (last != ranges.end() && last->first <= hi) {
    lo = std::min(lo, last->first);
    hi = std::max<haddr_t>(hi, last->first + last->second.size());
    ++last;
  }
  std::string merged(static_cast<size_t>(hi - lo), '\0');
  for (auto it = first; it != last; ++it) std::memcpy(&merged[it->first - lo], it->second.data(), it->second.size());
  std::memcpy(&merged[addr - lo], p, n);
  ranges.erase(first, last);
  ranges.emplace(lo, std::move(merged));
}

// ---- the driver's files ---------------------------------------------------------------------------

// What the driver keeps of one open file (HDF5 sees only `pub`).
struct OpenFile {
  std::string path;
  JournalMode mode = JournalMode::write;
  bool durable = true;
  int fd = -1;
  dev_t device = 0;
  ino_t inode = 0;
  haddr_t eoa = 0, eof = 0;
  // write: the size at the last commit point and HDF5's writes below it since (new bytes).
  haddr_t committed = 0;
  Ranges pending;
  bool journal_created = false;
  // read_committed: the old bytes a leftover journal holds.
  Ranges old;
};

struct DriverFile {
  H5FD_t pub;  // first: HDF5 casts between the two
  OpenFile* f;
};

OpenFile* of(const H5FD_t* file) { return reinterpret_cast<const DriverFile*>(file)->f; }

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, OpenFile*>& registry() {  // files open for writing, by path
  static std::map<std::string, OpenFile*> r;
  return r;
}

herr_t fail(const char* func, const std::string& what) {
  H5Epush2(H5E_DEFAULT, __FILE__, func, __LINE__, H5E_ERR_CLS, H5E_VFL, H5E_WRITEERROR, "%s", what.c_str());
  return -1;
}

H5FD_t* open_failed(const char* name, const std::string& why) {
  H5Epush2(H5E_DEFAULT, __FILE__, "open", __LINE__, H5E_ERR_CLS, H5E_FILE, H5E_CANTOPENFILE, "%s: %s", name, why.c_str());
  return nullptr;
}

// A writer takes a write lock (an open-file-description lock, independent of the readers'
// flock) for as long as it is open: a second writer is refused instead of corrupting the file.
bool exclusive_writer(int fd) {
#ifdef F_OFD_SETLK
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  l.l_start = 0;
  l.l_len = 1;
  if (::fcntl(fd, F_OFD_SETLK, &l) == 0) return true;
  return errno != EAGAIN && errno != EACCES;  // no such locks here: go on unlocked
#else
  (void)fd;
  return true;
#endif
}

H5FD_t* drv_open(const char* name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
  const auto* opts = static_cast<const DriverOptions*>(H5Pget_driver_info(fapl));
  if (!name || !*name || maxaddr == 0 || maxaddr == HADDR_UNDEF) return nullptr;
  const bool writing = (flags & H5F_ACC_RDWR) != 0;
  int o = writing ? O_RDWR : O_RDONLY;
  if (flags & H5F_ACC_TRUNC) o |= O_TRUNC;
  if (flags & H5F_ACC_CREAT) o |= O_CREAT;
  if (flags & H5F_ACC_EXCL) o |= O_EXCL;
  if (writing) {
    struct stat js;
    if (::stat(journal_path(name).c_str(), &js) == 0 && js.st_size > 0)
      return open_failed(name, "a journal of an unfinished commit is left: roll it back first");
  }
  int fd = ::open(name, o | O_CLOEXEC, 0644);
  if (fd < 0)
    return open_failed(name, std::string("unable to open file: ") + std::strerror(errno));
  if (writing && !exclusive_writer(fd)) {
    ::close(fd);
    return open_failed(name, "another process is writing this file");
  }
  if (!writing) lock(fd, LOCK_SH);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return nullptr;
  }
  auto* f = new OpenFile;
  f->path = name;
  f->mode = writing ? JournalMode::write : JournalMode::read_committed;
  f->durable = opts ? opts->durable != 0 : true;
  f->fd = fd;
  f->device = st.st_dev;
  f->inode = st.st_ino;
  f->eof = static_cast<haddr_t>(st.st_size);
  f->committed = f->eof;
  if (!writing) {
    std::string text;
    if (read_whole_file(journal_path(name), text)) {
      Journal j = parse_journal(text);
      if (j.committed >= 0) {
        f->old = std::move(j.old);
        f->eof = static_cast<haddr_t>(j.committed);
      }
    }
  } else {
    std::lock_guard<std::mutex> guard(registry_mutex());
    registry()[name] = f;
  }
  auto* d = new DriverFile{};
  d->f = f;
  return &d->pub;
}

herr_t drv_close(H5FD_t* file) {
  OpenFile* f = of(file);
  bool good = true;
  if (f->mode == JournalMode::write) {
    std::lock_guard<std::mutex> guard(registry_mutex());
    auto it = registry().find(f->path);
    if (it != registry().end() && it->second == f) registry().erase(it);
    // What HDF5 wrote since the last commit point is dropped: a writer commits before it closes,
    // and a failed commit leaves the file at the last one. An empty journal goes; a whole one
    // (a commit that failed between its steps) stays for roll_back_journal.
    struct stat js;
    const std::string jp = journal_path(f->path);
    if (f->journal_created && ::stat(jp.c_str(), &js) == 0 && js.st_size == 0) {
      ::unlink(jp.c_str());
      if (f->durable) sync_folder_of(f->path);
    }
  } else {
    lock(f->fd, LOCK_UN);
  }
  good = ::close(f->fd) == 0 && good;
  delete f;
  delete reinterpret_cast<DriverFile*>(file);
  return good ? 0 : fail("close", "cannot close the file");
}

int drv_cmp(const H5FD_t* a, const H5FD_t* b) {
  const OpenFile *x = of(a), *y = of(b);
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->inode != y->inode) return x->inode < y->inode ? -1 : 1;
  return 0;
}

herr_t drv_query(const H5FD_t*, unsigned long* flags) {
  *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
           H5FD_FEAT_AGGREGATE_SMALLDATA;
  return 0;
}

haddr_t drv_get_eoa(const H5FD_t* file, H5FD_mem_t) { return of(file)->eoa; }
herr_t drv_set_eoa(H5FD_t* file, H5FD_mem_t, haddr_t addr) {
  of(file)->eoa = addr;
  return 0;
}
haddr_t drv_get_eof(const H5FD_t* file, H5FD_mem_t) { return of(file)->eof; }

herr_t drv_get_handle(H5FD_t* file, hid_t, void** handle) {
  *handle = &of(file)->fd;
  return 0;
}

herr_t drv_read(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buf) {
  OpenFile& f = *of(file);
  if (!read_all(f.fd, buf, size, static_cast<off_t>(addr)))
    return fail("read", std::string("cannot read: ") + std::strerror(errno));
  overlay(f.mode == JournalMode::write ? f.pending : f.old, addr, size, static_cast<char*>(buf));
  return 0;
}

herr_t drv_write(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, const void* buf) {
  OpenFile& f = *of(file);
  if (f.mode != JournalMode::write) return fail("write", "the file is open for reading");
  const char* p = static_cast<const char*>(buf);
  const haddr_t below = addr < f.committed ? std::min<haddr_t>(size, f.committed - addr) : 0;
  put(f.pending, addr, p, static_cast<size_t>(below));  // the committed bytes wait for the commit point
  if (below < size && !write_all(f.fd, p + below, static_cast<size_t>(size - below), static_cast<off_t>(addr + below)))
    return fail("write", std::string("cannot write: ") + std::strerror(errno));
  f.eof = std::max<haddr_t>(f.eof, addr + size);
  return 0;
}

herr_t drv_flush(H5FD_t*, hid_t, hbool_t) { return 0; }  // the commit point syncs

// Sets the file's size to `size`: below the committed size, the bytes cut off become pending
// zeros (the commit point saves and cuts them); above it, the uncommitted tail is cut now.
bool set_size(OpenFile& f, haddr_t size) {
  if (size < f.committed) {
    for (auto it = f.pending.lower_bound(size); it != f.pending.end();) it = f.pending.erase(it);
    const std::string zeros(static_cast<size_t>(f.committed - size), '\0');
    put(f.pending, size, zeros.data(), zeros.size());
  }
  if (!truncate_fd(f.fd, std::max(size, f.committed))) return false;
  f.eof = size;
  return true;
}

herr_t drv_truncate(H5FD_t* file, hid_t, hbool_t) {
  OpenFile& f = *of(file);
  if (f.mode != JournalMode::write || f.eoa == f.eof) return 0;
  if (!set_size(f, f.eoa)) return fail("truncate", std::string("cannot truncate: ") + std::strerror(errno));
  return 0;
}

herr_t drv_lock(H5FD_t*, hbool_t) { return 0; }  // the driver takes its own locks
herr_t drv_unlock(H5FD_t*) { return 0; }

hid_t& driver_id() {
  static hid_t id = -1;
  return id;
}

herr_t drv_terminate() {
  driver_id() = -1;
  return 0;
}

const H5FD_class_t& driver_class() {
  static const H5FD_class_t c = [] {
    H5FD_class_t k{};
    k.name = "kevo_journal";
    k.maxaddr = kMaxAddr;
    k.fc_degree = H5F_CLOSE_SEMI;
    k.terminate = drv_terminate;
    k.fapl_size = sizeof(DriverOptions);
    k.open = drv_open;
    k.close = drv_close;
    k.cmp = drv_cmp;
    k.query = drv_query;
    k.get_eoa = drv_get_eoa;
    k.set_eoa = drv_set_eoa;
    k.get_eof = drv_get_eof;
    k.get_handle = drv_get_handle;
    k.read = drv_read;
    k.write = drv_write;
    k.flush = drv_flush;
    k.truncate = drv_truncate;
    k.lock = drv_lock;
    k.unlock = drv_unlock;
    const H5FD_mem_t map[H5FD_MEM_NTYPES] = H5FD_FLMAP_DICHOTOMY;
    std::memcpy(k.fl_map, map, sizeof map);
    return k;
  }();
  return c;
}

std::runtime_error failure(const std::string& what) { return std::runtime_error(what + ": " + std::strerror(errno)); }

// The commit point's steps, in order; a kill between any two leaves the last commit point.
void commit(OpenFile& f) {
  // The file ends at HDF5's end of allocation; bytes cut below the committed size are pending.
  if (f.eoa != f.eof && !set_size(f, f.eoa)) throw failure("cannot size " + f.path);
  if (f.pending.empty() && f.eof == f.committed) return;
  const std::string jp = journal_path(f.path);
  // 1. The journal: the old bytes of every range about to change.
  Ranges old;
  for (const auto& [addr, bytes] : f.pending) {
    std::string o(bytes.size(), '\0');
    if (!read_all(f.fd, o.data(), o.size(), static_cast<off_t>(addr))) throw failure("cannot read " + f.path);
    old.emplace(addr, std::move(o));
  }
  if (!f.pending.empty()) {
    int jfd = ::open(jp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (jfd < 0) throw failure("cannot create " + jp);
    const std::string text = journal_text(f.committed, old);
    bool good = write_all(jfd, text.data(), text.size(), 0) && (!f.durable || sync_fd(jfd));
    ::close(jfd);
    if (!good) throw failure("cannot write " + jp);
    if (!f.journal_created && f.durable && !sync_folder_of(f.path)) throw failure("cannot sync the folder of " + jp);
    f.journal_created = true;
  } else if (f.durable && !sync_fd(f.fd)) {  // only appended: their bytes reach the disk
    throw failure("cannot sync " + f.path);
  }
  // 2. The overwrites, while no reader is open.
  lock(f.fd, LOCK_EX);
  struct Unlock {
    int fd;
    ~Unlock() { lock(fd, LOCK_UN); }
  } unlock{f.fd};
  for (const auto& [addr, bytes] : f.pending)
    if (!write_all(f.fd, bytes.data(), bytes.size(), static_cast<off_t>(addr))) throw failure("cannot write " + f.path);
  if (!truncate_fd(f.fd, f.eof)) throw failure("cannot size " + f.path);
  if (f.durable && !sync_fd(f.fd)) throw failure("cannot sync " + f.path);
  // 3. The journal emptied: the new state is the committed one.
  if (!f.pending.empty()) {
    operation();
    int jfd = ::open(jp.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    bool good = jfd >= 0 && (!f.durable || sync_fd(jfd));
    if (jfd >= 0) ::close(jfd);
    if (!good) throw failure("cannot empty " + jp);
  }
  f.pending.clear();
  f.committed = f.eof;
}

}  // namespace

std::string journal_path(const std::string& path) { return path + ".journal"; }

void use_journal_driver(hid_t fapl, JournalMode mode, bool durable) {
  hid_t& id = driver_id();
  if (id < 0 || H5Iget_type(id) != H5I_VFL) id = H5FDregister(&driver_class());
  if (id < 0) throw std::runtime_error("cannot register the journaling HDF5 driver");
  DriverOptions o{static_cast<int>(mode), durable ? 1 : 0};
  if (H5Pset_driver(fapl, id, &o) < 0) throw std::runtime_error("cannot select the journaling HDF5 driver");
}

bool roll_back_journal(const std::string& path) {
  const std::string jp = journal_path(path);
  std::string text;
  if (!read_whole_file(jp, text)) {
    if (errno == ENOENT) return false;
    throw std::runtime_error("cannot read " + jp + ": " + std::strerror(errno));
  }
  const Journal j = parse_journal(text);
  if (j.committed >= 0) {  // not whole: the commit never got to its overwrites
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + path + " to roll it back: " + std::strerror(errno));
    bool good = true;
    for (const auto& [addr, bytes] : j.old)
      good = good && write_all(fd, bytes.data(), bytes.size(), static_cast<off_t>(addr));
    good = good && truncate_fd(fd, static_cast<haddr_t>(j.committed)) && sync_fd(fd);
    const int err = errno;
    ::close(fd);
    if (!good) throw std::runtime_error("cannot roll " + path + " back to its last commit: " + std::strerror(err));
  }
  operation();
  if (::unlink(jp.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error("cannot remove " + jp + ": " + std::strerror(errno));
  return j.committed >= 0;
}

void commit_journal(const std::string& path) {
  std::lock_guard<std::mutex> guard(registry_mutex());
  auto it = registry().find(path);
  if (it == registry().end()) throw std::runtime_error(path + " is not open for writing");
  commit(*it->second);
}

int64_t kill_at_file_operation_for_testing(int64_t n) {
  const int64_t counted = g_operations.exchange(0);
  g_kill_at = n;
  return counted;
}

}  // namespace kevo::store
