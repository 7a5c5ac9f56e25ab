// A small HTTP/1.1 server over POSIX sockets for `kevo serve`: one request per connection, bounded
// in everything an untrusted client controls (header and body sizes, read time, connections).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace kevo::serve {

struct HttpRequest {
  std::string method;                          // "GET", "POST"
  std::string path;                            // the target without its query
  std::map<std::string, std::string> headers;  // names lower-cased, values trimmed
  std::string body;
  std::string header(const std::string& lower_name) const;  // "" when absent
};

struct HttpResponse {
  int status = 200;
  std::string body;                            // JSON
  std::map<std::string, std::string> headers;  // extra ones (Retry-After, WWW-Authenticate)
};

// A response whose body is {"error": {"code": status, "message": message}}.
HttpResponse json_error(int status, const std::string& message);

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;    // request line and headers; over: 431
  size_t max_body_bytes = 1024 * 1024;    // Content-Length over it: 413, the body is not read
  int max_connections = 32;               // open at once; over: 503 at once and closed
  double read_seconds = 10;               // for the whole request; over: 408
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  // Binds `address` (an IPv4 or IPv6 literal, or "localhost") at `port` (0: any free port) and
  // listens. Throws std::runtime_error (one line) when it cannot.
  HttpServer(const std::string& address, int port, HttpLimits limits, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // Accepts connections until stop(), each on its own thread (at most max_connections); returns
  // after the open ones have finished.
  void serve();
  void stop() { stopping_ = true; }  // safe from a signal handler's thread or another thread

 private:
  void handle_connection(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  HttpLimits limits_;
  HttpHandler handler_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable idle_;
  int open_ = 0;
};

// Whether `address` is one of the loopback spellings served without a token: 127.0.0.1, ::1, localhost.
bool is_default_loopback(const std::string& address);

}  // namespace kevo::serve
