// Framed pipe I/O with full-read/full-write loops, so partial transfers never split a message.
#include "core/frame.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace kevo {

namespace {

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Returns the bytes read before EOF (n on success).
size_t read_all(int fd, char* p, size_t n, bool& error) {
  size_t got = 0;
  error = false;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      error = true;
      return got;
    }
    if (r == 0) return got;
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace

bool write_frame(int fd, const std::string& payload) {
  char header[12];
  uint32_t magic = kFrameMagic;
  uint64_t len = payload.size();
  std::memcpy(header, &magic, 4);
  std::memcpy(header + 4, &len, 8);  // x86-64 and aarch64 are little-endian
  return write_all(fd, header, sizeof header) && write_all(fd, payload.data(), payload.size());
}

FrameStatus read_frame(int fd, std::string& payload, uint64_t max_bytes) {
  char header[12];
  bool error = false;
  size_t got = read_all(fd, header, sizeof header, error);
  if (error) return FrameStatus::Error;
  if (got == 0) return FrameStatus::Eof;
  if (got < sizeof header) return FrameStatus::Garbage;
  uint32_t magic;
  uint64_t len;
  std::memcpy(&magic, header, 4);
  std::memcpy(&len, header + 4, 8);
  if (magic != kFrameMagic) return FrameStatus::Garbage;
  if (len > max_bytes) return FrameStatus::TooLarge;
  payload.resize(len);
  got = read_all(fd, payload.data(), len, error);
  if (error) return FrameStatus::Error;
  return got == len ? FrameStatus::Ok : FrameStatus::Garbage;
}

}  // namespace kevo
