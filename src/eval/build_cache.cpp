// The CUBIN cache: both files are written to a temporary name and renamed, the CUBIN first; the
// JSON names the CUBIN's SHA-256, so a reader never accepts a torn or mismatched pair.
#include "eval/build_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "core/sha256.h"
#include "eval/build_wire.h"

namespace kevo::eval {

namespace {

using Json = nlohmann::json;

std::string entry_path(const std::string& dir, const std::string& key, const char* suffix) {
  return dir + "/" + key.substr(0, 2) + "/" + key + suffix;
}

bool make_dirs(const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at < path.size() && path[at] != '/') continue;
    std::string prefix = path.substr(0, at);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

bool write_atomically(const std::string& path, const std::string& bytes) {
  static std::atomic<uint64_t> counter{0};
  std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  bool ok = done == bytes.size() && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  ok = ok && ::rename(temp.c_str(), path.c_str()) == 0;
  if (!ok) ::unlink(temp.c_str());
  return ok;
}

}  // namespace

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  out = buffer.str();
  return static_cast<bool>(in) || in.eof();
}

std::optional<BuildResult> load_cached_result(const std::string& dir, const std::string& key) {
  std::string text, cubin;
  if (!read_file(entry_path(dir, key, ".json"), text)) return std::nullopt;
  try {
    Json j = Json::parse(text);
    if (j.at("format").get<int>() != 1 || j.at("key").get<std::string>() != key) return std::nullopt;
    BuildResult r = build_result_from(j);
    if (r.status != BuildStatus::Ok && r.status != BuildStatus::CompileError) return std::nullopt;
    if (r.status == BuildStatus::Ok) {
      if (!read_file(entry_path(dir, key, ".cubin"), cubin) || cubin.size() != j.at("cubin_bytes").get<size_t>() ||
          sha256_hex(cubin) != j.at("cubin_sha256").get<std::string>())
        return std::nullopt;
      r.cubin = std::move(cubin);
    }
    r.cache_key = key;
    r.cache_hit = true;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // a corrupt entry is a miss; the rebuild overwrites it
  }
}

void store_cached_result(const std::string& dir, const BuildResult& r) {
  std::string key = r.cache_key;
  if (!make_dirs(dir + "/" + key.substr(0, 2))) return;
  Json j = build_result_json(r);
  j.erase("cubin_base64");
  j["format"] = 1;
  j["key"] = key;
  j["cubin_bytes"] = r.cubin.size();
  j["cubin_sha256"] = sha256_hex(r.cubin);
  if (r.status == BuildStatus::Ok && !write_atomically(entry_path(dir, key, ".cubin"), r.cubin)) return;
  write_atomically(entry_path(dir, key, ".json"), dump_json(j));  // a failed store only costs a rebuild
}

}  // namespace kevo::eval
