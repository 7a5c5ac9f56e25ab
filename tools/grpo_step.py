#!/usr/bin/env python3
"""One GRPO update of a LoRA adapter from the completions kevo's llm policy made in a generation.

Run it between generations (docs/llm.md, "Training between generations"):

    build/kevo run TASK.json --out c.h5 --policy llm --llm-model MODEL \\
      --between-generations 'python3 tools/grpo_step.py --model /models/coder --out /scratch/adapter' \\
      --load-adapter /scratch/adapter --adapter-name kevo-lora

It reads the last generation's samples of $KEVO_CAMPAIGN (or --campaign FILE.h5, or --samples
FILE.jsonl from `kevo export --samples`), makes a GRPO group of each request (one parent's
children), continues the adapter at --out (a new one the first time), takes --steps optimiser steps
and writes the adapter back to --out. What ran is appended as one JSON line to --log (default: the
campaign file's path + ".grpo.jsonl"). Exit status 0 when the adapter was written, 2 for bad
arguments, unreadable samples or missing packages (KEVO_RL=1 scripts/setup.sh installs them).
"""
import argparse
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kevo_rl import deps  # noqa: E402


def parse(argv):
    ap = argparse.ArgumentParser(description="One GRPO update of a LoRA adapter from a kevo generation's completions.")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--campaign", default=os.environ.get("KEVO_CAMPAIGN"), help="campaign file (default: $KEVO_CAMPAIGN)")
    src.add_argument("--samples", help="JSONL written by kevo export --samples, instead of the campaign file")
    ap.add_argument("--model", required=True, help="the policy model's folder (Hugging Face format): the reference model")
    ap.add_argument("--out", required=True, help="the adapter folder: continued if it holds one, then rewritten")
    ap.add_argument("--generation", type=int,
                    help="the generation to learn from (default: $KEVO_GENERATION under kevo, else the last with samples)")
    ap.add_argument("--lr", type=float, default=1e-5, help="learning rate (AdamW)")
    ap.add_argument("--steps", type=int, default=1, help="optimiser steps over the generation's groups")
    ap.add_argument("--clip", type=float, default=0.2, help="ratio clip range")
    ap.add_argument("--kl", type=float, default=0.04, help="KL penalty to the reference model")
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--lora-alpha", type=int, default=32)
    ap.add_argument("--target-modules", default="q_proj,k_proj,v_proj,o_proj", help="LoRA target modules")
    ap.add_argument("--max-prompt-tokens", type=int, default=0,
                    help="keep the prompts' last N tokens (the sampler's limit; serve_hf.py's flag of the same name)")
    ap.add_argument("--max-completion-tokens", type=int, default=0)
    ap.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 (auto: cuda when there is one)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log", help="JSON lines of what ran (default: beside the campaign or samples file)")
    a = ap.parse_args(argv)
    if a.generation is None and os.environ.get("KEVO_GENERATION", "").lstrip("-").isdigit() and not a.samples:
        a.generation = int(os.environ["KEVO_GENERATION"])
    if not a.campaign and not a.samples:
        ap.error("no samples: give --campaign, --samples, or run under kevo (KEVO_CAMPAIGN)")
    if a.steps < 0 or a.lr <= 0 or not 0 < a.clip < 1 or a.kl < 0 or a.lora_r < 1:
        ap.error("--steps >= 0, --lr > 0, 0 < --clip < 1, --kl >= 0 and --lora-r >= 1")
    return a


def main(argv=None):
    a = parse(argv)
    why = deps.missing()
    if why:
        print("grpo_step: " + why, file=sys.stderr)
        return 2
    import torch
    from kevo_rl import grpo, samples

    source = a.samples or a.campaign
    try:
        rows = samples.read_samples(source)
    except (OSError, ValueError, KeyError) as e:
        print("grpo_step: %s: %s" % (source, e), file=sys.stderr)
        return 2
    groups = samples.groups_of(rows, a.generation)
    generation = a.generation if a.generation is not None else samples.last_generation(rows)
    cfg = grpo.GrpoConfig(learning_rate=a.lr, steps=a.steps, clip=a.clip, kl=a.kl, lora_r=a.lora_r,
                          lora_alpha=a.lora_alpha, target_modules=a.target_modules,
                          max_prompt_tokens=a.max_prompt_tokens, max_completion_tokens=a.max_completion_tokens,
                          seed=a.seed)
    device = a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    continued = os.path.exists(os.path.join(a.out, "adapter_config.json"))
    try:
        model, tokenizer = grpo.load_policy(a.model, a.out, cfg, device, a.dtype)
    except (OSError, ValueError) as e:
        print("grpo_step: cannot load the model or adapter: %s" % str(e).splitlines()[0], file=sys.stderr)
        return 2
    record = grpo.train(model, tokenizer, groups, cfg)
    grpo.save_adapter(model, a.out, {"generation": generation, "samples_from": source, "steps": a.steps})
    rewards = [s.reward for g in groups for s in g.samples]
    line = {"time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "samples_from": source, "generation": generation, "model": a.model, "adapter": a.out,
            "continued": continued, "device": device, "config": grpo.config_record(cfg),
            "mean_reward": sum(rewards) / len(rewards) if rewards else None, **record}
    log = a.log or (source + ".grpo.jsonl")
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    print("grpo_step: generation %s: %d groups (%d without signal), %d completions, %d steps, loss %s; adapter %s"
          % (generation, record["groups"], record["groups_without_signal"], record["sequences"], a.steps,
             record["losses"][-1] if record["losses"] else "-", a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
