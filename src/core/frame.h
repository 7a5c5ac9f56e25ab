// Length-prefixed messages over pipes: how the engine talks to its worker processes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kevo {

// A frame is a 4-byte magic, a little-endian 8-byte length, then that many bytes.
constexpr uint32_t kFrameMagic = 0x6b65766f;  // "kevo"

// Writes one frame to `fd`, retrying on EINTR and short writes. False when the peer is gone.
bool write_frame(int fd, const std::string& payload);

enum class FrameStatus { Ok, Eof, Garbage, TooLarge, Error };

// Reads one frame from `fd` into `payload` (at most `max_bytes`). Eof means the peer closed
// the pipe cleanly before a frame began; Garbage, a wrong magic or a frame cut short.
FrameStatus read_frame(int fd, std::string& payload, uint64_t max_bytes);

}  // namespace kevo
