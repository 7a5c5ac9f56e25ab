#!/usr/bin/env python3
"""The RL loop end to end on loopback: a kevo campaign with --policy llm against tools/serve_hf.py
serving a tiny randomly initialised model, tools/grpo_step.py between generations, the adapter
reloaded, and each later generation's requests served by the adapter trained on the one before
(the server's log shows it: adapter name, the generation it learned from, its weights' SHA-256).

    rl_loop_test.py KEVO [--gpu] [--layers 2 --hidden 64] [--budget 16] [--out DIR]

--gpu (bench/rl_loop_gpu.sh on the node): candidates measured on GPU 0 instead of replayed, the
model served and trained on the same GPU; --out keeps the campaign and the logs there.

The tiny model's replies are garbage: kevo records them as unusable samples with the invalid
reward, which is what the trainer then reads. Exit 77 (ctest: skipped) with the reason when torch,
transformers, peft or h5py are missing.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from kevo_rl import deps  # noqa: E402
import verdict  # noqa: E402  (tests/tools/verdict.py, beside this file)

MAX_PROMPT, MAX_TOKENS = 512, 24


def start_server(model_dir, log, device):
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tools", "serve_hf.py"), "--model", model_dir,
                             "--served-model-name", "tiny", "--port", "0", "--log", log,
                             "--max-prompt-tokens", str(MAX_PROMPT), "--device", device],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()  # "serve_hf: serving tiny on http://127.0.0.1:PORT/v1 (cpu)"
    if "http://" not in line:
        proc.kill()
        raise RuntimeError("serve_hf did not start: " + line + proc.stdout.read()[-2000:])
    return proc, line.split("http://")[1].split()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kevo")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--out")
    a = ap.parse_args()
    kevo, device = a.kevo, "cuda" if a.gpu else "cpu"
    generations = a.budget // 4
    why = deps.missing()
    if not why:
        try:
            import h5py  # noqa: F401
        except ImportError:
            why = "h5py does not import (Debian: python3-h5py)"
    if why:
        print("SKIP: " + why)
        return 77
    from kevo_rl import samples, tiny_model

    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        model_dir, adapter = os.path.join(tmp, "tiny"), os.path.join(tmp, "adapter")
        serve_log, campaign = os.path.join(tmp, "serve.jsonl"), os.path.join(tmp, "c.h5")
        tiny_model.build(model_dir, layers=a.layers, hidden=a.hidden)
        server, url = start_server(model_dir, serve_log, device)
        try:
            hook = ("%s %s --model %s --out %s --max-prompt-tokens %d --max-completion-tokens %d --steps 1 --lr 1e-3 --device %s"
                    % (sys.executable, os.path.join(ROOT, "tools", "grpo_step.py"), model_dir, adapter, MAX_PROMPT, MAX_TOKENS,
                       device))
            evaluator = ["--gpus", "0"] if a.gpu else ["--replay", os.path.join(ROOT, "results", "spaces", "relu.h5")]
            cmd = [kevo, "run", os.path.join(ROOT, "tasks", "01_relu.json")] + evaluator + [
                   "--out", campaign, "--budget-evals", str(a.budget),
                   "--population", "4", "--islands", "1", "--policy", "llm", "--llm-url", "http://" + url,
                   "--llm-model", "tiny", "--llm-samples", "2", "--llm-weight", "1", "--llm-max-tokens", str(MAX_TOKENS),
                   "--between-generations", hook, "--load-adapter", adapter, "--adapter-name", "kevo-lora"]
            started = time.time()
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            print(r.stdout[-1500:] + r.stderr[-1500:])
            print("campaign: %.1f s" % (time.time() - started))
            check(r.returncode == 0, "kevo run exited %d" % r.returncode)
        finally:
            server.terminate()
            server.wait(timeout=30)

        trained = [json.loads(l) for l in open(campaign + ".grpo.jsonl")] if os.path.exists(campaign + ".grpo.jsonl") else []
        check([t["generation"] for t in trained] == list(range(generations)),
              "grpo_step ran after each of the %d generations: %s" % (generations, [t["generation"] for t in trained]))
        rows = samples.read_campaign(campaign)
        check(len(rows) > 0, "the campaign recorded completions")
        check(all(s.reward == -1 for s in rows if s.status in ("bad_reply", "edit_failed", "rejected")),
              "unusable replies carry the invalid reward")
        check(sum(t["sequences"] + t["groups_without_signal"] for t in trained) > 0, "the trainer read groups")
        later = [s for s in rows if s.generation >= 2]
        check(later and all(s.model == "kevo-lora" for s in later),
              "generations after the first hook were answered by the adapter: %s" % sorted({s.model for s in rows}))

        events = [json.loads(l) for l in open(serve_log)]
        loads = [e for e in events if e["event"] == "load_lora_adapter"]
        check([e["adapter_trained"]["generation"] for e in loads] == list(range(generations)),
              "the adapter was reloaded after every trainer step: %s" % [e.get("adapter_trained") for e in loads])
        current, served = None, []
        for e in events:
            if e["event"] == "load_lora_adapter":
                current = e
            elif e["event"] == "unload_lora_adapter":
                current = None
            elif e["event"] == "chat":
                if current is None:
                    check(e["adapter"] is None, "a request before any adapter was served by the base model")
                else:
                    check(e["adapter"] == "kevo-lora" and e["adapter_sha256"] == current["adapter_sha256"]
                          and e["adapter_trained"] == current["adapter_trained"],
                          "a request was served by the adapter loaded last: %s" % e)
                    if e["adapter_trained"]:
                        served.append(e["adapter_trained"]["generation"])
        check(len(set(served)) >= 2, "requests of several generations were served by the adapter each learned "
                                     "before them (trained on generations %s)" % sorted(set(served)))
        print("samples %d, trainer steps %d, adapter loads %d, requests served by adapters trained on generations %s"
              % (len(rows), len(trained), len(loads), sorted(set(served))))
        chats = [e for e in events if e["event"] == "chat"]
        if chats and trained:
            print("figures (%s): %d chat requests, %.3f s each on average; trainer %.2f s per step in-process"
                  % (device, len(chats), sum(e["seconds"] for e in chats) / len(chats),
                     sum(t["seconds"] for t in trained) / len(trained)))
        if a.out:
            os.makedirs(a.out, exist_ok=True)
            for f in (campaign, campaign + ".grpo.jsonl", serve_log):
                if os.path.exists(f):
                    shutil.copy(f, a.out)
    return verdict.finish(failures)


if __name__ == "__main__":
    sys.exit(main())
