#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for the llm client's tests.

Usage: llm_stub.py --script SCRIPT.json [--log LOG.jsonl]

Binds 127.0.0.1 on a free port, prints "PORT <n>" as its first line and serves until killed.
SCRIPT.json is {"responses": [entry, ...], "default": entry, "tokenizer": bool}: each POST
/v1/chat/completions takes the next entry, then "default" (none: HTTP 500). With "tokenizer" true,
POST /tokenize {"prompt"} answers {"count"} by the test tokenizer (tests/support/test_tokenizer.h:
each run of up to 4 word characters is a token, each other non-blank character one, each line
break one) and takes no entry; without it /tokenize is 404, as on a server that has none.
Entry fields, all optional:
  content / contents  the completion, repeated n times / the completions, cycled to n
  status              HTTP status (200); other than 200 the body is {"error": {"message": ...}}
  message             that error message (a stock one otherwise)
  retry_after         sent as a Retry-After header
  delay               seconds to wait before answering
  raw                 a body sent verbatim with status 200
  usage               {"prompt_tokens", "completion_tokens"} (default: characters // 4)
POST /v1/load_lora_adapter and /v1/unload_lora_adapter answer 200 "Success." and take no entry.
--log appends one JSON line per request: {"path", "body", "authorization", "time"}.
Standard library only.
"""
import argparse
import json
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHAT_PATH = "/v1/chat/completions"
TOKENIZE_PATH = "/tokenize"
TEST_TOKEN = re.compile(r"[A-Za-z0-9_\x80-\U0010ffff]{1,4}|\n|[^A-Za-z0-9_\x80-\U0010ffff\s]")
ADAPTER_PATHS = ("/v1/load_lora_adapter", "/v1/unload_lora_adapter")


class Script:
    """The scripted answers, handed out one per chat request across handler threads."""

    def __init__(self, data):
        self.responses = list(data.get("responses", []))
        self.default = data.get("default")
        self.tokenizer = bool(data.get("tokenizer", False))
        self.next = 0
        self.lock = threading.Lock()

    def take(self):
        with self.lock:
            if self.next < len(self.responses):
                entry = self.responses[self.next]
                self.next += 1
                return entry
            return self.default


class Log:
    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8") if path else None
        self.lock = threading.Lock()

    def write(self, record):
        if not self.file:
            return
        with self.lock:
            self.file.write(json.dumps(record) + "\n")
            self.file.flush()


def completion_body(entry, request):
    n = int(request.get("n", 1) or 1)
    if "contents" in entry and entry["contents"]:
        pool = entry["contents"]
        contents = [pool[i % len(pool)] for i in range(n)]
    else:
        contents = [entry.get("content", "")] * n
    usage = entry.get("usage")
    if usage is None:
        chars = sum(len(str(m.get("content", ""))) for m in request.get("messages", []))
        usage = {"prompt_tokens": chars // 4,
                 "completion_tokens": sum(len(c) // 4 for c in contents)}
    usage = dict(usage)
    usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model"),
        "choices": [{"index": i, "message": {"role": "assistant", "content": c}, "finish_reason": "stop"}
                    for i, c in enumerate(contents)],
        "usage": usage,
    }


class Server(ThreadingHTTPServer):
    daemon_threads = True  # a delayed answer must not hold up shutdown

    def handle_error(self, request, client_address):
        # A client that timed out hangs up before a delayed answer; that is the test, not a fault.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # quiet: the tests read the --log file instead
        pass

    def send(self, status, body, content_type="application/json", headers=None):
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0) or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            body = None
        self.server.log.write({"path": self.path, "body": body,
                               "authorization": self.headers.get("Authorization"), "time": time.time()})

        if self.path in ADAPTER_PATHS:
            self.send(200, "Success.", content_type="text/plain")
            return
        if self.path == TOKENIZE_PATH and self.server.script.tokenizer:
            count = len(TEST_TOKEN.findall(str((body or {}).get("prompt", ""))))
            self.send(200, json.dumps({"count": count, "max_model_len": 32768}))
            return
        if self.path != CHAT_PATH:
            self.send(404, json.dumps({"error": {"message": "no such path: " + self.path}}))
            return

        entry = self.server.script.take()
        if entry is None:
            self.send(500, json.dumps({"error": {"message": "llm_stub: the script ran out of responses"}}))
            return
        if entry.get("delay"):
            time.sleep(float(entry["delay"]))
        headers = {}
        if "retry_after" in entry:
            headers["Retry-After"] = str(entry["retry_after"])
        if "raw" in entry:
            self.send(200, entry["raw"], headers=headers)
            return
        status = int(entry.get("status", 200))
        if status != 200:
            message = entry.get("message", "llm_stub: scripted status %d" % status)
            self.send(status, json.dumps({"error": {"message": message}}), headers=headers)
            return
        self.send(200, json.dumps(completion_body(entry, body or {})), headers=headers)

    def do_GET(self):
        self.send(404, json.dumps({"error": {"message": "no such path: " + self.path}}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", required=True)
    parser.add_argument("--log")
    args = parser.parse_args()
    with open(args.script, encoding="utf-8") as f:
        script = Script(json.load(f))

    server = Server(("127.0.0.1", 0), Handler)
    server.script = script
    server.log = Log(args.log)
    # SIGTERM raises SystemExit out of serve_forever at once (shutdown() would wait out its poll).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("PORT %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    server.server_close()


if __name__ == "__main__":
    sys.exit(main())
