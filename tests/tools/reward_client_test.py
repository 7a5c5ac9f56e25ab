#!/usr/bin/env python3
"""tools/kevo_rl/reward_client.py against a real `kevo serve` on loopback (replay evaluator): a
TRL-style reward function scoring completions as edits of a parent, and the bearer token a
non-default bind requires. Standard library only.

    reward_client_test.py KEVO
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from kevo_rl.reward_client import KevoReward, KevoServeError, evaluate  # noqa: E402
import verdict  # noqa: E402  (tests/tools/verdict.py, beside this file)


def start(kevo, bind, env):
    proc = subprocess.Popen([kevo, "serve", "--bind", bind, "--port", "0", "--replay",
                             os.path.join(ROOT, "results", "spaces", "relu.h5"), "--tasks",
                             os.path.join(ROOT, "tasks", "01_relu.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    line = proc.stdout.readline()
    if "listening on http://" not in line:
        proc.kill()
        raise RuntimeError("kevo serve did not start: " + line + proc.stdout.read())
    return proc, line.split("listening on ")[1].split()[0]


def main():
    kevo = sys.argv[1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([kevo, "space", os.path.join(ROOT, "tasks", "01_relu.json"), "--sample", "1", "--out", tmp],
                           capture_output=True, text=True)
        parent = open(os.path.join(tmp, sorted(f for f in os.listdir(tmp) if f.endswith(".cu"))[0])).read()
    env = dict(os.environ)
    env.pop("KEVO_SERVE_TOKEN", None)
    proc, url = start(kevo, "127.0.0.1", env)
    try:
        reward = KevoReward(url, task="relu", parent=parent)
        edit = "<<<<<<< SEARCH\n// kevo templates, common part: the grid shapes and load hints several families take, vector\n" \
               "=======\n// edited by a model\n>>>>>>> REPLACE\n"
        completions = ["garbage", [{"role": "assistant", "content": edit}],
                       "<<<<<<< SEARCH\nno such line\n=======\nx\n>>>>>>> REPLACE\n"]
        rewards = reward(prompts=["p"] * 3, completions=completions)
        check(rewards == [-1.0, 0.0, -1.0], "rewards of garbage, an edit never measured, an edit that misses: %s" % rewards)
        check([a["candidate"] for a in reward.last] == ["bad_reply", "ok", "edit_failed"],
              "candidate statuses: %s" % [a["candidate"] for a in reward.last])
        check(reward.last[1]["measurement"]["status"] == "unmeasured", "replay has no recording of the edit")
        try:
            evaluate(url, "no_such_task", source="x")
            check(False, "an unknown task raised nothing")
        except KevoServeError as e:
            check(e.status == 422 and "no_such_task" in str(e), "unknown task: %s" % e)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    env["KEVO_SERVE_TOKEN"] = "t0ken"
    proc, url = start(kevo, "127.0.0.2", env)
    try:
        check(evaluate(url, "relu", source=parent, token="t0ken")["candidate"] == "ok", "the right token is let in")
        try:
            evaluate(url, "relu", source=parent, token="")
            check(False, "no token was let in")
        except KevoServeError as e:
            check(e.status == 401, "no token: %s" % e)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return verdict.finish(failures)


if __name__ == "__main__":
    sys.exit(main())
