#!/usr/bin/env python3
"""A small OpenAI-compatible server around Hugging Face transformers and PEFT: a stand-in for vLLM
where there is none (a CPU machine, a test, a node without vLLM's wheels), not a replacement for it.

    python3 tools/serve_hf.py --model DIR [--served-model-name NAME] [--port 8000] [--log serve.jsonl]

Endpoints, spelled as vLLM spells them:
  POST /v1/chat/completions    {model, messages, n, temperature, top_p, max_tokens, seed}
  POST /v1/load_lora_adapter   {lora_name, lora_path}     (vLLM: VLLM_ALLOW_RUNTIME_LORA_UPDATING)
  POST /v1/unload_lora_adapter {lora_name}
  GET  /v1/models
Requests are answered one at a time (one model, one lock). Every request and adapter change is
logged as a JSON line (--log), with the adapter that served it and the SHA-256 of its weights, so
a run can show which adapter answered which generation. Binds loopback by default.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kevo_rl import deps  # noqa: E402


def adapter_provenance(path):
    """What grpo_step.py wrote beside the adapter (the generation it learned from), or None."""
    try:
        with open(os.path.join(path, "kevo_grpo.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def adapter_digest(path):
    """SHA-256 of an adapter's weights file (which adapter answered, even when its name stays the same)."""
    for name in ("adapter_model.safetensors", "adapter_model.bin"):
        f = os.path.join(path, name)
        if os.path.exists(f):
            with open(f, "rb") as fh:
                return hashlib.sha256(fh.read()).hexdigest()
    return None


class ApiError(Exception):
    def __init__(self, status, message, kind="BadRequestError"):
        super().__init__(message)
        self.status, self.kind = status, kind


class Engine:
    """The model, its adapters and the log; every method holds the lock."""

    def __init__(self, model_dir, served_name, device, dtype, max_prompt_tokens, max_tokens_limit, log_path, seed):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=getattr(torch, dtype)).to(device)
        self.model.eval()
        self.served_name, self.device = served_name, device
        self.max_prompt_tokens, self.max_tokens_limit = max_prompt_tokens, max_tokens_limit
        self.adapters = {}  # name -> {path, sha256}
        self.lock = threading.Lock()
        self.log_file = open(log_path, "a", encoding="utf-8") if log_path else None
        self.seed = seed
        self.calls = 0

    def log(self, **event):
        event["time"] = round(time.time(), 3)
        if self.log_file:
            self.log_file.write(json.dumps(event) + "\n")
            self.log_file.flush()

    def models(self):
        with self.lock:
            data = [{"id": self.served_name, "object": "model", "owned_by": "serve_hf"}]
            data += [{"id": n, "object": "model", "owned_by": "serve_hf", "parent": self.served_name, "root": a["path"]}
                     for n, a in self.adapters.items()]
            return {"object": "list", "data": data}

    def load_adapter(self, name, path):
        from peft import PeftModel

        if not isinstance(name, str) or not name or not isinstance(path, str) or not path:
            raise ApiError(400, "lora_name and lora_path are required strings")
        with self.lock:
            if name in self.adapters:
                raise ApiError(400, "The lora adapter '%s' has already been loaded." % name)
            if not os.path.exists(os.path.join(path, "adapter_config.json")):
                raise ApiError(400, "no adapter at %s (adapter_config.json missing)" % path)
            try:
                if isinstance(self.model, PeftModel):
                    self.model.load_adapter(path, adapter_name=name)
                else:
                    self.model = PeftModel.from_pretrained(self.model, path, adapter_name=name)
            except Exception as e:  # a folder that is not an adapter of this model
                raise ApiError(400, "cannot load %s: %s" % (path, str(e).splitlines()[0] if str(e) else type(e).__name__))
            self.model.eval()
            self.adapters[name] = {"path": path, "sha256": adapter_digest(path), "trained": adapter_provenance(path)}
            self.log(event="load_lora_adapter", adapter=name, path=path, adapter_sha256=self.adapters[name]["sha256"],
                     adapter_trained=self.adapters[name]["trained"])
            return "Success: LoRA adapter '%s' added successfully." % name

    def unload_adapter(self, name):
        with self.lock:
            if name not in self.adapters:
                raise ApiError(404, "The lora adapter '%s' cannot be found." % name, "NotFoundError")
            self.model.delete_adapter(name)
            del self.adapters[name]
            self.log(event="unload_lora_adapter", adapter=name)
            return "Success: LoRA adapter '%s' removed successfully." % name

    def chat(self, body):
        from kevo_rl.chat import prompt_ids

        model = body.get("model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m and "content" in m for m in messages):
            raise ApiError(400, "messages must be a list of {role, content}")
        n = body.get("n", 1)
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens") or 16
        temperature = float(body.get("temperature", 1.0))
        top_p = float(body.get("top_p", 1.0))
        if not isinstance(n, int) or not 1 <= n <= 64 or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ApiError(400, "n must be 1..64 and max_tokens a positive integer")
        max_tokens = min(max_tokens, self.max_tokens_limit)
        with self.lock:
            if model != self.served_name and model not in self.adapters:
                raise ApiError(404, "The model `%s` does not exist." % model, "NotFoundError")
            ids = prompt_ids(self.tokenizer, messages, self.max_prompt_tokens)
            self.calls += 1
            self.torch.manual_seed(body.get("seed", self.seed + self.calls))
            adapter = model if model in self.adapters else None
            started = time.time()
            outputs = self._generate(ids, n, max_tokens, temperature, top_p, adapter)
            choices, completion_tokens = [], 0
            eos = self.tokenizer.eos_token_id
            for i, seq in enumerate(outputs):
                new = seq[len(ids):].tolist()
                finish = "length"
                if eos is not None and eos in new:
                    new, finish = new[:new.index(eos)], "stop"
                pad = self.tokenizer.pad_token_id
                new = [t for t in new if t != pad]
                completion_tokens += len(new)
                choices.append({"index": i, "message": {"role": "assistant", "content": self.tokenizer.decode(new, skip_special_tokens=True)},
                                "finish_reason": finish})
            self.log(event="chat", model=model, adapter=adapter,
                     adapter_sha256=self.adapters[adapter]["sha256"] if adapter else None,
                     adapter_trained=self.adapters[adapter]["trained"] if adapter else None, n=n,
                     prompt_tokens=len(ids), completion_tokens=completion_tokens, seconds=round(time.time() - started, 3))
            return {"id": "chatcmpl-%d" % self.calls, "object": "chat.completion", "created": int(time.time()),
                    "model": model, "choices": choices,
                    "usage": {"prompt_tokens": len(ids), "completion_tokens": completion_tokens,
                              "total_tokens": len(ids) + completion_tokens}}

    def _generate(self, ids, n, max_tokens, temperature, top_p, adapter):
        from contextlib import nullcontext
        from peft import PeftModel

        torch = self.torch
        x = torch.tensor([ids], device=self.device)
        kwargs = dict(max_new_tokens=max_tokens, num_return_sequences=n, pad_token_id=self.tokenizer.pad_token_id,
                      eos_token_id=self.tokenizer.eos_token_id, attention_mask=torch.ones_like(x))
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature, top_p=top_p)
        else:
            kwargs.update(do_sample=False)
            if n > 1:
                raise ApiError(400, "n > 1 needs temperature > 0")
        peft = isinstance(self.model, PeftModel)
        if peft and adapter:
            self.model.set_adapter(adapter)
        ctx = self.model.disable_adapter() if peft and not adapter else nullcontext()
        with torch.no_grad(), ctx:
            return self.model.generate(x, **kwargs)


def make_handler(engine, max_body):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # the JSON log says what matters
            pass

        def _send(self, status, payload):
            data = (json.dumps(payload) if not isinstance(payload, str) else payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if not isinstance(payload, str) else "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status, message, kind):
            self._send(status, {"object": "error", "message": message, "type": kind, "code": status,
                                "error": {"message": message, "type": kind, "code": status}})

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, engine.models())
            else:
                self._error(404, "no such endpoint: %s" % self.path, "NotFoundError")

        def do_POST(self):
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if length < 0 or length > max_body:
                self.close_connection = True
                return self._error(413 if length > 0 else 400, "body too large or without Content-Length", "BadRequestError")
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("not an object")
                route = self.path.rstrip("/")
                if route == "/v1/chat/completions":
                    self._send(200, engine.chat(body))
                elif route == "/v1/load_lora_adapter":
                    self._send(200, engine.load_adapter(body.get("lora_name"), body.get("lora_path")))
                elif route == "/v1/unload_lora_adapter":
                    self._send(200, engine.unload_adapter(body.get("lora_name")))
                else:
                    self._error(404, "no such endpoint: %s" % self.path, "NotFoundError")
            except ApiError as e:
                self._error(e.status, str(e), e.kind)
            except (ValueError, TypeError) as e:
                self._error(400, "malformed request: %s" % e, "BadRequestError")
            except Exception as e:  # the model's own failure (out of memory, say): the server lives on
                self._error(500, "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""), "InternalServerError")

    return Handler


def main(argv=None):
    ap = argparse.ArgumentParser(description="An OpenAI-compatible server around transformers + PEFT (a stand-in for vLLM).")
    ap.add_argument("--model", required=True, help="the model's folder (Hugging Face format)")
    ap.add_argument("--served-model-name", help="the name requests use (default: the folder's name)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000, help="0: any free port (printed)")
    ap.add_argument("--log", help="JSON lines: every request (with the adapter that served it) and adapter change")
    ap.add_argument("--max-prompt-tokens", type=int, default=0, help="keep the prompts' last N tokens (0: all)")
    ap.add_argument("--max-tokens-limit", type=int, default=4096, help="cap on a request's max_tokens")
    ap.add_argument("--max-body", type=int, default=8 << 20)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    why = deps.missing()
    if why:
        print("serve_hf: " + why, file=sys.stderr)
        return 2
    import torch

    device = a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    name = a.served_model_name or os.path.basename(os.path.normpath(a.model))
    try:
        engine = Engine(a.model, name, device, a.dtype, a.max_prompt_tokens, a.max_tokens_limit, a.log, a.seed)
    except OSError as e:
        print("serve_hf: cannot load %s: %s" % (a.model, str(e).splitlines()[0]), file=sys.stderr)
        return 2
    server = ThreadingHTTPServer((a.host, a.port), make_handler(engine, a.max_body))
    server.daemon_threads = True
    print("serve_hf: serving %s on http://%s:%d/v1 (%s)" % (name, a.host, server.server_address[1], device), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
