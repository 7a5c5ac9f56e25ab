// The HTTP/1.1 server of `kevo serve`: accepting, reading a bounded request, parsing it, writing
// the handler's response. Every request closes its connection (no keep-alive, no chunked bodies),
// which keeps the state a client can hold to one thread and one buffer.
#include "serve/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

namespace kevo::serve {

namespace {

using Clock = std::chrono::steady_clock;

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away: nothing to tell it
    done += static_cast<size_t>(n);
  }
}

void send_response(int fd, const HttpResponse& r) {
  std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + reason(r.status) + "\r\n" +
                     "Content-Type: application/json\r\nContent-Length: " + std::to_string(r.body.size()) +
                     "\r\nConnection: close\r\n";
  for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
  write_all(fd, head + "\r\n" + r.body);
}

// Reads into `buf` until it holds `want` bytes or "\r\n\r\n" (want 0), within the deadline.
// Returns 0, or the error status to answer: 408 (too slow), 431 (headers too large), -1 (gone).
int read_until(int fd, std::string& buf, size_t want, size_t cap, Clock::time_point deadline) {
  char chunk[8192];
  for (;;) {
    if (want ? buf.size() >= want : buf.find("\r\n\r\n") != std::string::npos) return 0;
    if (!want && buf.size() > cap) return 431;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return 408;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return 408;
    if (ready < 0) return -1;
    size_t room = want ? std::min(sizeof chunk, want - buf.size()) : sizeof chunk;
    ssize_t n = ::recv(fd, chunk, room, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    buf.append(chunk, static_cast<size_t>(n));
  }
}

// Parses the request line and headers of `head` (without the blank line). Returns 0 or a status.
int parse_head(const std::string& head, HttpRequest& req) {
  size_t line_end = head.find("\r\n");
  std::string line = head.substr(0, line_end);
  size_t a = line.find(' '), b = line.rfind(' ');
  if (a == std::string::npos || a == b) return 400;
  req.method = line.substr(0, a);
  std::string target = line.substr(a + 1, b - a - 1), version = line.substr(b + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return 400;
  if (target.empty() || target[0] != '/') return 400;
  req.path = target.substr(0, target.find('?'));
  size_t at = line_end == std::string::npos ? head.size() : line_end + 2;
  while (at < head.size()) {
    size_t end = head.find("\r\n", at);
    if (end == std::string::npos) end = head.size();
    std::string h = head.substr(at, end - at);
    size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0 || h[0] == ' ' || h[0] == '\t') return 400;  // no folding
    req.headers[lower(h.substr(0, colon))] = trim(h.substr(colon + 1));
    at = end + 2;
  }
  return 0;
}

}  // namespace

std::string HttpRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

HttpResponse json_error(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.body = nlohmann::json{{"error", {{"code", status}, {"message", message}}}}.dump() + "\n";
  return r;
}

bool is_default_loopback(const std::string& address) {
  return address == "127.0.0.1" || address == "::1" || address == "localhost";
}

HttpServer::HttpServer(const std::string& address, int port, HttpLimits limits, HttpHandler handler)
    : limits_(limits), handler_(std::move(handler)) {
  if (port < 0 || port > 65535) throw std::runtime_error("--port: must be between 0 and 65535");
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (address == "localhost" ? 0 : AI_NUMERICHOST);
  std::string host = address == "localhost" ? "127.0.0.1" : address;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    throw std::runtime_error("--bind " + address + ": not an address (" + gai_strerror(rc) + ")");
  listen_fd_ = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (listen_fd_ >= 0) ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  bool ok = listen_fd_ >= 0 && ::bind(listen_fd_, found->ai_addr, found->ai_addrlen) == 0 && ::listen(listen_fd_, 64) == 0;
  int err = errno;
  ::freeaddrinfo(found);
  if (!ok) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw std::runtime_error("cannot listen on " + address + ":" + std::to_string(port) + ": " + std::strerror(err));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

HttpServer::~HttpServer() {
  stop();
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return open_ == 0; });
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void HttpServer::serve() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;  // wakes up to notice stop()
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (open_ >= limits_.max_connections) {
        HttpResponse busy = json_error(503, "too many connections; retry later");
        busy.headers["Retry-After"] = "1";
        send_response(fd, busy);
        ::close(fd);
        continue;
      }
      ++open_;
    }
    std::thread([this, fd] {
      handle_connection(fd);
      ::close(fd);
      std::lock_guard<std::mutex> lock(mu_);
      --open_;
      idle_.notify_all();
    }).detach();
  }
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return open_ == 0; });
}

void HttpServer::handle_connection(int fd) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long>(limits_.read_seconds * 1000));
  std::string buf;
  if (int rc = read_until(fd, buf, 0, limits_.max_header_bytes, deadline); rc != 0) {
    if (rc == 408) send_response(fd, json_error(408, "the request did not arrive in time"));
    if (rc == 431) send_response(fd, json_error(431, "request headers over " + std::to_string(limits_.max_header_bytes) + " bytes"));
    return;
  }
  size_t head_end = buf.find("\r\n\r\n");
  if (head_end > limits_.max_header_bytes) {
    send_response(fd, json_error(431, "request headers over " + std::to_string(limits_.max_header_bytes) + " bytes"));
    return;
  }
  HttpRequest req;
  if (parse_head(buf.substr(0, head_end), req) != 0) {
    send_response(fd, json_error(400, "malformed request line or header"));
    return;
  }
  if (!req.header("transfer-encoding").empty()) {
    send_response(fd, json_error(501, "chunked bodies are not accepted; send Content-Length"));
    return;
  }
  size_t length = 0;
  if (std::string cl = req.header("content-length"); !cl.empty()) {
    if (cl.size() > 12 || cl.find_first_not_of("0123456789") != std::string::npos) {
      send_response(fd, json_error(400, "Content-Length is not a number"));
      return;
    }
    length = std::stoull(cl);
  } else if (req.method == "POST") {
    send_response(fd, json_error(411, "a POST needs Content-Length"));
    return;
  }
  if (length > limits_.max_body_bytes) {
    send_response(fd, json_error(413, "request body over " + std::to_string(limits_.max_body_bytes) + " bytes"));
    return;
  }
  req.body = buf.substr(head_end + 4);
  if (req.body.size() > length) {
    send_response(fd, json_error(400, "more bytes than Content-Length (one request per connection)"));
    return;
  }
  if (int rc = req.body.size() < length ? read_until(fd, req.body, length, 0, deadline) : 0; rc != 0) {
    if (rc == 408) send_response(fd, json_error(408, "the request body did not arrive in time"));
    return;
  }
  HttpResponse res;
  try {
    res = handler_(req);
  } catch (const std::exception& e) {
    res = json_error(500, std::string("internal error: ") + e.what());
  }
  send_response(fd, res);
}

}  // namespace kevo::serve
