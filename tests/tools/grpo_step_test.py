#!/usr/bin/env python3
"""tools/grpo_step.py moves probability toward the better completions of a group.

A tiny randomly initialised causal LM (tools/kevo_rl/tiny_model.py: no download) and a synthetic
generation of kevo samples (two groups of four completions with kevo's bucketed rewards) go
through grpo_step.py as a user runs it (JSONL in, adapter out, a log line); the adapter it wrote
must raise the log-probability of each group's best completion and lower its worst's, against the
base model. Exit 77 (ctest: skipped) with the reason when torch, transformers or peft are missing.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from kevo_rl import deps  # noqa: E402
import verdict  # noqa: E402  (tests/tools/verdict.py, beside this file)

SYSTEM = {"role": "system", "content": "Improve the kernel. Reply with SEARCH/REPLACE blocks."}
GROUPS = [
    ("__global__ void relu(float* y, const float* x, int n) { ... }",
     [("<<<<<<< SEARCH\nint i\n=======\nint j\n>>>>>>> REPLACE\n", 2.0), ("nothing useful", -1.0),
      ("<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n", 0.0), ("```cuda\n// rewrite\n```", 1.0)]),
    ("__global__ void softmax(float* y, const float* x) { ... }",
     [("```cuda\n__global__ void k() {}\n```", 1.0), ("??", -1.0), ("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n", 2.0),
      ("```json\n{}\n```", 0.0)]),
]


def write_samples(path):
    sid = 0
    with open(path, "w") as f:
        for gi, (parent, completions) in enumerate(GROUPS):
            prompt = [SYSTEM, {"role": "user", "content": "Parent:\n" + parent}]
            for text, reward in completions:
                f.write(json.dumps({"prompt": prompt, "response": text, "reward": reward, "group": 100 + gi * 4,
                                    "id": sid, "generation": 3, "status": "ok"}) + "\n")
                sid += 1
    # An older generation's row that must be ignored, with a reward that would pull the other way.
    with open(path, "a") as f:
        f.write(json.dumps({"prompt": [SYSTEM], "response": "nothing useful", "reward": 2.0, "group": 1,
                            "id": sid, "generation": 2}) + "\n")


def logprobs(model_dir, adapter_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from kevo_rl.chat import completion_ids, prompt_ids
    from kevo_rl.grpo import token_logprobs

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    if adapter_dir:
        from peft import PeftModel
        model = PeftModel.from_pretrained(model, adapter_dir)
    model.eval()
    out = []
    with torch.no_grad():
        for parent, completions in GROUPS:
            p = prompt_ids(tok, [SYSTEM, {"role": "user", "content": "Parent:\n" + parent}])
            out.append([token_logprobs(model, p, completion_ids(tok, t)).sum().item() for t, _ in completions])
    return out


# Where the trainer runs (the log-probabilities are compared on the CPU): KEVO_RL_DEVICE=cuda on a GPU node.
DEVICE = os.environ.get("KEVO_RL_DEVICE", "cpu")


def main():
    why = deps.missing()
    if why:
        print("SKIP: " + why)
        return 77
    from kevo_rl import tiny_model

    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        model_dir, adapter, jsonl = os.path.join(tmp, "tiny"), os.path.join(tmp, "adapter"), os.path.join(tmp, "s.jsonl")
        tiny_model.build(model_dir, layers=2, hidden=64)
        write_samples(jsonl)
        cmd = [sys.executable, os.path.join(ROOT, "tools", "grpo_step.py"), "--samples", jsonl, "--model", model_dir,
               "--out", adapter, "--steps", "8", "--lr", "3e-3", "--lora-r", "8", "--device", DEVICE]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout + r.stderr)
            return 1
        print(r.stdout.strip())
        before, after = logprobs(model_dir, None), logprobs(model_dir, adapter)
        for g, (_, completions) in enumerate(GROUPS):
            rewards = [w for _, w in completions]
            best, worst = rewards.index(max(rewards)), rewards.index(min(rewards))
            print("group %d: best %+.3f -> %+.3f, worst %+.3f -> %+.3f" % (g, before[g][best], after[g][best],
                                                                          before[g][worst], after[g][worst]))
            if not after[g][best] > before[g][best]:
                failures.append("group %d: the best completion's log-probability did not rise" % g)
            if not after[g][worst] < before[g][worst]:
                failures.append("group %d: the worst completion's log-probability did not fall" % g)
        log = [json.loads(l) for l in open(jsonl + ".grpo.jsonl")]
        if len(log) != 1 or log[0]["generation"] != 3 or log[0]["sequences"] != 8 or len(log[0]["losses"]) != 8:
            failures.append("the log line does not say what ran: %s" % log)
        # A second call continues the adapter it finds rather than starting over.
        r = subprocess.run(cmd[:-6] + ["--steps", "1", "--lora-r", "8", "--device", DEVICE], capture_output=True, text=True)
        log = [json.loads(l) for l in open(jsonl + ".grpo.jsonl")]
        if r.returncode != 0 or len(log) != 2 or not log[1]["continued"]:
            failures.append("a second step did not continue the adapter: %s %s" % (r.stderr[-300:], log[-1:]))
        # Bad input is one line and exit 2.
        bad = os.path.join(tmp, "bad.jsonl")
        open(bad, "w").write("{not json\n")
        r = subprocess.run(cmd[:3] + [bad] + cmd[4:], capture_output=True, text=True)
        if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1:
            failures.append("a malformed samples file: exit %d, %r" % (r.returncode, r.stderr))
    return verdict.finish(failures)


if __name__ == "__main__":
    sys.exit(main())
