// Base64 (RFC 4648, with padding) for binary payloads inside JSON frames (CUBINs, IPC handles).
#pragma once

#include <string>
#include <string_view>

namespace kevo {

std::string base64_encode(std::string_view bytes);
// Throws std::invalid_argument on text that is not padded base64.
std::string base64_decode(std::string_view text);

}  // namespace kevo
