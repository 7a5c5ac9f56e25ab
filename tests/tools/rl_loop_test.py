#!/usr/bin/env python3
"""The RL loop end to end on loopback: a kevo campaign with --policy llm against tools/serve_hf.py
serving a tiny randomly initialised model, tools/grpo_step.py between generations, the adapter
reloaded, and each later generation's requests served by the adapter trained on the one before
(the server's log shows it: adapter name, the generation it learned from, its weights' SHA-256).

    rl_loop_test.py KEVO

The tiny model's replies are garbage: kevo records them as unusable samples with the invalid
reward, which is what the trainer then reads. Exit 77 (ctest: skipped) with the reason when torch,
transformers, peft or h5py are missing.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from kevo_rl import deps  # noqa: E402

MAX_PROMPT, MAX_TOKENS = 512, 24


def start_server(model_dir, log):
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tools", "serve_hf.py"), "--model", model_dir,
                             "--served-model-name", "tiny", "--port", "0", "--log", log,
                             "--max-prompt-tokens", str(MAX_PROMPT)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()  # "serve_hf: serving tiny on http://127.0.0.1:PORT/v1 (cpu)"
    if "http://" not in line:
        proc.kill()
        raise RuntimeError("serve_hf did not start: " + line + proc.stdout.read()[-2000:])
    return proc, line.split("http://")[1].split()[0]


def main():
    if len(sys.argv) != 2:
        print("usage: rl_loop_test.py KEVO", file=sys.stderr)
        return 2
    kevo = sys.argv[1]
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
        tiny_model.build(model_dir)
        server, url = start_server(model_dir, serve_log)
        try:
            hook = ("%s %s --model %s --out %s --max-prompt-tokens %d --max-completion-tokens %d --steps 1 --lr 1e-3 --device cpu"
                    % (sys.executable, os.path.join(ROOT, "tools", "grpo_step.py"), model_dir, adapter, MAX_PROMPT, MAX_TOKENS))
            cmd = [kevo, "run", os.path.join(ROOT, "tasks", "01_relu.json"), "--replay",
                   os.path.join(ROOT, "results", "spaces", "relu.h5"), "--out", campaign, "--budget-evals", "16",
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
        check([t["generation"] for t in trained] == [0, 1, 2, 3],
              "grpo_step ran after each of the 4 generations: %s" % [t["generation"] for t in trained])
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
        check([e["adapter_trained"]["generation"] for e in loads] == [0, 1, 2, 3],
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
                    served.append(e["adapter_trained"]["generation"])
        check(len(set(served)) >= 2, "requests of several generations were served by the adapter each learned "
                                     "before them (trained on generations %s)" % sorted(set(served)))
        print("samples %d, trainer steps %d, adapter loads %d, requests served by adapters trained on generations %s"
              % (len(rows), len(trained), len(loads), sorted(set(served))))
    for f in failures:
        print("FAIL: " + f)
    print("%d passed, %d failed" % (1 if not failures else 0, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
