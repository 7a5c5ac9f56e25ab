"""One GRPO update of a LoRA adapter on kevo's groups (DeepSeekMath's objective, as TRL's GRPOTrainer
computes it): within a group, advantages are the rewards standardised; each completion token's
ratio to the policy before this update is clipped (PPO's surrogate); a KL penalty to the reference
model (the base model, adapter disabled) keeps the policy near it (the k3 estimator).

Why not TRL: its GRPOTrainer samples the completions itself from a dataset of prompts, while here
kevo has sampled them (through vLLM or serve_hf) and measured them; the update is thirty lines.
"""
import json
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass


PROVENANCE = "kevo_grpo.json"  # beside the adapter's weights: the generation it learned from


@dataclass
class GrpoConfig:
    learning_rate: float = 1e-5
    steps: int = 1                 # optimiser steps over the generation's groups
    clip: float = 0.2              # the ratio is clipped to [1 - clip, 1 + clip]
    kl: float = 0.04               # weight of the KL penalty to the reference model
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    target_modules: str = "q_proj,k_proj,v_proj,o_proj"
    max_prompt_tokens: int = 0     # 0: whole prompts (else the last N tokens, as the sampler was told)
    max_completion_tokens: int = 0
    seed: int = 0


def load_policy(model_dir, adapter_dir, cfg, device="cpu", dtype="float32"):
    """The base model with a trainable LoRA adapter: the one at `adapter_dir` if there is one, else a new one."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=getattr(torch, dtype)).to(device)
    if adapter_dir and os.path.exists(os.path.join(adapter_dir, "adapter_config.json")):
        model = PeftModel.from_pretrained(base, adapter_dir, is_trainable=True)
    else:
        lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                          target_modules=[m.strip() for m in cfg.target_modules.split(",") if m.strip()],
                          task_type="CAUSAL_LM")
        model = get_peft_model(base, lora)
    return model, tokenizer


def advantages(rewards):
    """Rewards standardised within their group; None when the group carries no signal (one sample, or all equal)."""
    if len(rewards) < 2:
        return None
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    if std < 1e-8:
        return None
    return [(r - mean) / (std + 1e-4) for r in rewards]


def token_logprobs(model, prompt, completion):
    """Log-probabilities of the completion's tokens after the prompt (a 1-D tensor)."""
    import torch

    device = next(model.parameters()).device
    ids = torch.tensor([prompt + completion], device=device)
    logits = model(input_ids=ids, use_cache=False).logits[0, len(prompt) - 1:-1].float()
    return torch.log_softmax(logits, dim=-1).gather(1, ids[0, len(prompt):, None]).squeeze(1)


def sequences(tokenizer, groups, cfg):
    """(prompt ids, completion ids, advantage) of every sample of a group with a signal; and the groups skipped."""
    from .chat import completion_ids, prompt_ids

    out, skipped = [], 0
    for g in groups:
        adv = advantages([s.reward for s in g.samples])
        if adv is None:
            skipped += 1
            continue
        p = prompt_ids(tokenizer, g.prompt, cfg.max_prompt_tokens)
        for s, a in zip(g.samples, adv):
            c = completion_ids(tokenizer, s.response, cfg.max_completion_tokens)
            if c:
                out.append((p, c, a))
    return out, skipped


def train(model, tokenizer, groups, cfg):
    """Runs cfg.steps optimiser steps on the groups; returns what ran (for the log)."""
    import torch

    torch.manual_seed(cfg.seed)
    started = time.time()
    seqs, skipped = sequences(tokenizer, groups, cfg)
    record = {"groups": len(groups), "groups_without_signal": skipped, "sequences": len(seqs),
              "completion_tokens": sum(len(c) for _, c, _ in seqs), "losses": [], "kl": []}
    if not seqs:
        record["seconds"] = round(time.time() - started, 3)
        return record
    model.eval()  # no dropout: the ratio must be 1 at the first step
    with torch.no_grad():
        old = [token_logprobs(model, p, c) for p, c, _ in seqs]
        with model.disable_adapter():
            ref = [token_logprobs(model, p, c) for p, c, _ in seqs]
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=0.0)
    for _ in range(cfg.steps):
        opt.zero_grad()
        total, kl_total = 0.0, 0.0
        for (p, c, a), lp_old, lp_ref in zip(seqs, old, ref):
            lp = token_logprobs(model, p, c)
            ratio = torch.exp(lp - lp_old)
            surrogate = torch.min(ratio * a, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * a)
            kl = torch.exp(lp_ref - lp) - (lp_ref - lp) - 1
            loss = -(surrogate - cfg.kl * kl).mean() / len(seqs)
            loss.backward()
            total += loss.item()
            kl_total += kl.mean().item() / len(seqs)
        opt.step()
        record["losses"].append(round(total, 6))
        record["kl"].append(round(kl_total, 6))
    record["seconds"] = round(time.time() - started, 3)
    return record


def save_adapter(model, out_dir, provenance=None):
    """Writes the adapter where --load-adapter reads it (adapter_config.json, adapter_model.safetensors,
    and kevo_grpo.json: what it was trained on), replacing the folder only once the new one is complete."""
    tmp = out_dir.rstrip("/") + ".tmp-%d" % os.getpid()
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    with open(os.path.join(tmp, PROVENANCE), "w") as f:
        json.dump(dict(provenance or {}, time=time.time()), f)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.replace(tmp, out_dir)


def config_record(cfg):
    return asdict(cfg)
