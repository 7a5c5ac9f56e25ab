"""kevo serve as a reward function: the client of POST /v1/evaluate (docs/serve.md), and the shape
TRL's GRPOTrainer expects of a reward function, so an external trainer can score its completions
with kevo's verification and timing. Standard library only.

    from kevo_rl.reward_client import KevoReward
    reward = KevoReward("http://127.0.0.1:8100", task="softmax", parent=open("parent.cu").read())
    trainer = GRPOTrainer(model=..., reward_funcs=[reward], ...)

A completion is read as a reply to the parent (SEARCH/REPLACE blocks, or a whole candidate in a
```cuda block), exactly as kevo's llm policy reads one; without a parent, as a whole candidate.
"""
import json
import os
import urllib.error
import urllib.request


class KevoServeError(RuntimeError):
    """kevo serve refused the request (its status and one-line message), or could not be reached."""

    def __init__(self, status, message):
        super().__init__("kevo serve: HTTP %s: %s" % (status, message))
        self.status = status


def evaluate(url, task, source=None, parent=None, edit=None, parent_fitness=None, best_fitness=None,
             token=None, timeout=600):
    """One evaluation: the answer's JSON ({candidate, reward, measurement, ...}). `task` is a bundled
    task's name or a contract (a dict). Give `source`, or `parent` and `edit`. The token defaults to
    $KEVO_SERVE_TOKEN."""
    candidate = {"source": source} if source is not None else {"parent": parent, "edit": edit}
    body = {"task": task, "candidate": candidate}
    if parent_fitness is not None:
        body["parent_fitness"] = parent_fitness
    if best_fitness is not None:
        body["best_fitness"] = best_fitness
    req = urllib.request.Request(url.rstrip("/") + "/v1/evaluate", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    token = token if token is not None else os.environ.get("KEVO_SERVE_TOKEN")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = e.reason
        raise KevoServeError(e.code, message)
    except urllib.error.URLError as e:
        raise KevoServeError("-", "cannot reach %s (%s)" % (url, e.reason))


def completion_text(completion):
    """TRL passes plain strings, or for conversational data a list of messages: the reply's text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return completion[-1].get("content", "")
    return str(completion)


class KevoReward:
    """A TRL-style reward function, f(prompts, completions, **kwargs) -> list of floats: each
    completion's reward from kevo serve (-1 for a reply that makes no candidate)."""

    def __init__(self, url, task, parent=None, parent_fitness=None, best_fitness=None, token=None, timeout=600):
        self.url, self.task, self.parent = url, task, parent
        self.parent_fitness, self.best_fitness = parent_fitness, best_fitness
        self.token, self.timeout = token, timeout
        self.__name__ = "kevo_reward"  # TRL names its logged reward columns after the function
        self.last = []                 # the answers of the last call, for logging

    def __call__(self, prompts=None, completions=None, **kwargs):
        # A dataset may carry each prompt's own parent (a column named "parent"): it wins.
        parents = kwargs.get("parent") or [self.parent] * len(completions)
        self.last = []
        for text, parent in zip(map(completion_text, completions), parents):
            if parent is None:
                answer = evaluate(self.url, self.task, source=text, parent_fitness=self.parent_fitness,
                                  best_fitness=self.best_fitness, token=self.token, timeout=self.timeout)
            else:
                answer = evaluate(self.url, self.task, parent=parent, edit=text, parent_fitness=self.parent_fitness,
                                  best_fitness=self.best_fitness, token=self.token, timeout=self.timeout)
            self.last.append(answer)
        return [float(a["reward"]) for a in self.last]
