"""kevo's completions with their rewards, as GRPO groups.

A group is one request: the completions of one prompt (one parent's children). Rewards are
kevo's (the run's --reward), standardised within the group by the trainer. Input is either the
campaign file itself (read with h5py, /llm_samples in docs/campaign-file.md) or the JSONL that
`kevo export --samples` writes (docs/llm.md). Requests that failed have no completion and are left out.
"""
import json
from dataclasses import dataclass, field


@dataclass
class Sample:
    prompt: list          # chat messages [{role, content}]
    response: str
    reward: float
    group: int
    generation: int
    status: str = ""
    model: str = ""


@dataclass
class Group:
    key: int
    prompt: list
    samples: list = field(default_factory=list)


def read_jsonl(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                j = json.loads(line)
                out.append(Sample(j["prompt"], j["response"], float(j["reward"]), int(j["group"]),
                                  int(j.get("generation", 0)), j.get("status", ""), j.get("model", "")))
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError("%s line %d: not a kevo sample (%s)" % (path, n, e))
    return out


def read_campaign(path):
    """The /llm_samples rows of a campaign file (h5py; the file may be open in kevo: no locking)."""
    import h5py

    try:
        f = h5py.File(path, "r", locking=False)
    except TypeError:  # an h5py without the locking argument
        f = h5py.File(path, "r")
    with f:
        if "llm_samples" not in f:
            return []
        g = f["llm_samples"]

        def pooled(name):
            data = g[name + "_data"][:].tobytes()
            return [data[o:o + n].decode("utf-8", "replace") for o, n in zip(g[name + "_offset"][:], g[name + "_length"][:])]

        prompts, responses = pooled("prompt"), pooled("response")
        status = list(g["status"].asstr()[:])
        model = list(g["model"].asstr()[:])
        out = []
        for i, (rq, gen, rw) in enumerate(zip(g["request"][:], g["generation"][:], g["reward"][:])):
            if status[i] == "request_failed" and not responses[i]:
                continue
            out.append(Sample(json.loads(prompts[i]), responses[i], float(rw), int(rq), int(gen), status[i], model[i]))
        return out


def read_samples(path):
    """Samples from a campaign file (.h5) or a JSONL export (anything else)."""
    return read_campaign(path) if path.endswith(".h5") else read_jsonl(path)


def last_generation(samples):
    return max((s.generation for s in samples), default=-1)


def groups_of(samples, generation=None):
    """GRPO groups of one generation (the last one by default), in the order of their first sample."""
    if generation is None:
        generation = last_generation(samples)
    by_key = {}
    for s in samples:
        if s.generation != generation:
            continue
        g = by_key.setdefault(s.group, Group(s.group, s.prompt))
        g.samples.append(s)
    return list(by_key.values())
