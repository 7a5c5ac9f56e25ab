"""Checks for tools/torch_baseline.py; run `python3 tools/test_torch_baseline.py` (torch parts skip without torch)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
spec = importlib.util.spec_from_file_location("torch_baseline", os.path.join(HERE, "torch_baseline.py"))
tb = importlib.util.module_from_spec(spec)
sys.modules["torch_baseline"] = tb  # dataclasses look their module up by name
spec.loader.exec_module(tb)

failures: list[str] = []


def check(what: str, ok: bool):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def raises(exc_type, fn) -> BaseException | None:
    try:
        fn()
    except exc_type as e:
        return e
    return None


# ---------------------------------------------------------------------------------------------- shapes


def test_eval_dim():
    axes = {"H": 10, "L": 100, "P": 1, "K": 3, "S": 2, "B": 7}
    check("eval_dim axis", tb.eval_dim("H", axes) == 10)
    check("eval_dim H - 2", tb.eval_dim("H - 2", axes) == 8)
    check("eval_dim conv formula", tb.eval_dim("(L + 2*P - K) // S + 1", axes) == (100 + 2 - 3) // 2 + 1)
    check("eval_dim precedence", tb.eval_dim("1 + B * 2", axes) == 15)
    check("eval_dim floor division is Python's", tb.eval_dim("-B // 2", axes) == -4)
    check("eval_dim modulo is Python's", tb.eval_dim("-B % 3", axes) == 2)
    check("eval_dim literal", tb.eval_dim("42", axes) == 42)
    for bad in ["f(H)", "H.real", "Q", "H ** 2", "H / 2", "1.5", "True", "__import__('os')", "[H]", "H if B else 1",
                "H < 2", "", "H +", "lambda: 1", "B // 0"]:
        e = raises(ValueError, lambda: tb.eval_dim(bad, axes))
        check(f"eval_dim rejects {bad!r}", e is not None)


# ---------------------------------------------------------------------------------------------- statistics


def test_percentile_and_ci():
    xs = sorted(float(i) for i in range(101))
    check("percentile p20 of 0..100", tb.percentile(xs, 0.2) == 20.0)
    check("percentile interpolates", tb.percentile([0.0, 10.0], 0.25) == 2.5)
    lo, hi = tb.median_ci95(xs)
    check("median CI brackets the median", lo <= 50 <= hi and hi - lo < 30)

    rng = random.Random(1)
    tight = [1.0 + rng.gauss(0, 0.002) for _ in range(200)]
    noisy = [rng.lognormvariate(0, 1.0) for _ in range(200)]
    check("tight data: CI under 1% of the median", tb.summarize(tight, 0.01)["converged"])
    check("noisy data: CI over 1% of the median", not tb.summarize(noisy, 0.01)["converged"])
    # Coverage: the order-statistic interval holds the true median about 95% of the time.
    hits = 0
    for _ in range(400):
        sample = [rng.expovariate(1.0) for _ in range(60)]
        lo, hi = tb.median_ci95(sample)
        hits += lo <= math.log(2) <= hi
    check(f"median CI coverage near 95% ({hits / 400:.3f})", 0.91 <= hits / 400 <= 0.99)


class SyntheticTimer:
    """Stands in for CudaTimer: calls fn and returns drawn times."""

    def __init__(self, draw):
        self.draw, self.calls = draw, 0

    def warm_up(self, fn, count):
        for _ in range(count):
            fn()

    def time_batch(self, fn, count, sample_telemetry=False):
        for _ in range(count):
            fn()
            self.calls += 1
        return [self.draw() for _ in range(count)], ({"sm_clock_mhz": 1980} if sample_telemetry else {})


def test_measure_loop():
    rng = random.Random(2)
    opts = tb.TimingOptions(min_reps=20, max_reps=500, target_ci=0.01)
    tight = tb.measure(lambda: None, SyntheticTimer(lambda: 1.0 + rng.gauss(0, 0.003)), opts)
    check(f"tight timings converge early (n={tight['n']})", tight["converged"] and tight["n"] < 100)
    check("telemetry from the first batch is kept", tight.get("sm_clock_mhz") == 1980)
    noisy = tb.measure(lambda: None, SyntheticTimer(lambda: rng.lognormvariate(0, 1.5)), opts)
    check(f"noisy timings stop at max_reps (n={noisy['n']})", not noisy["converged"] and noisy["n"] == 500)
    few = tb.measure(lambda: None, SyntheticTimer(lambda: 2.0), tb.TimingOptions(min_reps=7, max_reps=7))
    check("constant timings: n = min_reps, median exact", few["n"] == 7 and few["median_ms"] == 2.0)
    for key in ("median_ms", "p20_ms", "p80_ms", "min_ms", "n", "ci95_half_width_ms", "converged"):
        check(f"measure reports {key}", key in tight)


# ---------------------------------------------------------------------------------------------- contracts


def write(tmp: str, name: str, text: str) -> str:
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def relu_contract_text(**overrides) -> str:
    with open(os.path.join(REPO, "tasks", "01_relu.json")) as f:
        doc = json.load(f)
    doc.update(overrides)
    return json.dumps(doc)


def test_contracts():
    # The development tasks and the training corpus (tasks/train/).
    tasks = sorted(os.path.relpath(os.path.join(d, f), os.path.join(REPO, "tasks"))
                   for d, _, files in os.walk(os.path.join(REPO, "tasks")) for f in files if f.endswith(".json"))
    for name in tasks:
        path = os.path.join(REPO, "tasks", name)
        e = raises(tb.ContractError, lambda: tb.load_contract(path))
        check(f"loads {name}", e is None)
    relu = tb.load_contract(os.path.join(REPO, "tasks", "01_relu.json"))
    check("relu bytes_moved = input + output", relu.bytes_moved(0) == 2 * 4096 * 393216 * 4)
    pool = tb.load_contract(os.path.join(REPO, "tasks", "12_max_pool2d.json"))
    check("max_pool2d output shape from 'H - 1'",
          pool.shape_of(pool.outputs[0], pool.axis_values(1)) == [2, 4, 31, 31])
    lin = tb.load_contract(os.path.join(REPO, "tasks", "13_linear_leaky_relu.json"))
    check("kaiming a read", abs(lin.inputs[1].init["a"] - math.sqrt(5)) < 1e-12)

    with tempfile.TemporaryDirectory() as tmp:
        cases = {
            "missing file": os.path.join(tmp, "nope.json"),
            "bad JSON": write(tmp, "bad.json", '{"name": "x",\n  "axes": }'),
            "unknown field": write(tmp, "u.json", relu_contract_text(speed="fast")),
            "unknown axis": write(tmp, "a.json", relu_contract_text(
                outputs={"y": {"shape": ["B", "Q"], "dtype": "float32"}})),
            "power in shape": write(tmp, "p.json", relu_contract_text(
                outputs={"y": {"shape": ["B", "D ** 2"], "dtype": "float32"}})),
            "bad dtype": write(tmp, "d.json", relu_contract_text(
                outputs={"y": {"shape": ["B", "D"], "dtype": "float8"}})),
            "missing workload axis": write(tmp, "w.json", relu_contract_text(workloads=[{"B": 4}])),
            "zero size": write(tmp, "z.json", relu_contract_text(workloads=[{"B": 0, "D": 4}])),
            "run params differ": write(tmp, "r.json", relu_contract_text(reference="def run(z):\n    return z\n")),
            "reference syntax": write(tmp, "s.json", relu_contract_text(reference="def run(x):\n    return (x\n")),
            "unknown dist": write(tmp, "i.json", relu_contract_text(
                inputs={"x": {"shape": ["B", "D"], "dtype": "float32", "init": {"dist": "cauchy"}}})),
            "normal on int": write(tmp, "n.json", relu_contract_text(
                inputs={"x": {"shape": ["B", "D"], "dtype": "int32", "init": {"dist": "normal"}}})),
        }
        for what, path in cases.items():
            e = raises(tb.ContractError, lambda: tb.load_contract(path))
            check(f"contract error: {what}", e is not None and path in str(e) and "\n" not in str(e))
        wrapped = write(tmp, "f.json", relu_contract_text(workloads=[{"axes": {"B": 2, "D": 3}, "uuid": "u"}]))
        check("FlashInfer workload layout", tb.load_contract(wrapped).axis_values(0) == {"B": 2, "D": 3})
        const = write(tmp, "c.json", relu_contract_text(axes={"B": {"type": "var"}, "D": {"type": "const",
                                                                                         "value": 5}},
                                                        workloads=[{"B": 2}]))
        check("const axis takes its value", tb.load_contract(const).axis_values(0) == {"B": 2, "D": 5})


def test_input_seed():
    # The C++ loop in src/eval/inputs.cpp: h = h * 1099511628211 ^ c over the name's bytes, in uint64.
    check("input_seed of '' is the seed", tb.input_seed(7, "") == 7)
    check("input_seed of 'x'", tb.input_seed(0, "x") == ord("x"))
    check("input_seed wraps at 64 bits", tb.input_seed(2**64 - 1, "ab") ==
          ((((2**64 - 1) * 1099511628211 % 2**64) ^ 97) * 1099511628211 % 2**64) ^ 98)


# ---------------------------------------------------------------------------------------------- command line


def run_main(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = tb.main(argv)
        except SystemExit as e:
            code = e.code
    return code, err.getvalue()


def test_arguments():
    relu = os.path.join(REPO, "tasks", "01_relu.json")
    bad = {
        "no tasks": ["--out", "o.json"],
        "no --out": [relu],
        "bad mode": [relu, "--out", "o.json", "--modes", "eager,jit"],
        "repeated mode": [relu, "--out", "o.json", "--modes", "eager,eager"],
        "bad workloads": [relu, "--out", "o.json", "--workloads", "first"],
        "negative workload": [relu, "--out", "o.json", "--workloads", "-1"],
        "zero min reps": [relu, "--out", "o.json", "--min-reps", "0"],
        "max below min": [relu, "--out", "o.json", "--min-reps", "50", "--max-reps", "10"],
        "non-positive ci": [relu, "--out", "o.json", "--target-ci", "0"],
        "bad compile mode": [relu, "--out", "o.json", "--compile-mode", "reduce-overhead"],
        "non-integer seed": [relu, "--out", "o.json", "--seed", "x"],
    }
    for what, argv in bad.items():
        code, _ = run_main(argv)
        check(f"argument error exits 2: {what}", code == 2)
    args = tb.parse_args([relu, "--out", "o.json", "--workloads", "1,0", "--modes", "compile,eager"])
    check("parse: workloads sorted", args.workloads == [0, 1])
    check("parse: modes in canonical order", args.modes == ("eager", "compile"))

    code, err = run_main([os.path.join(REPO, "tasks", "missing.json"), "--out", "o.json"])
    check("missing contract: exit 2, one line", code == 2 and err.count("\n") == 1 and "missing.json" in err)
    code, err = run_main([relu, "--out", "o.json", "--workloads", "5"])
    check("workload out of range: exit 2, one line", code == 2 and err.count("\n") == 1)
    try:
        import torch
        expect = None if torch.cuda.is_available() else "torch_baseline: no CUDA device\n"
    except ImportError:
        expect = "torch_baseline: torch is not installed\n"
    if expect:  # with a GPU this would run the whole benchmark
        code, err = run_main([relu, "--out", "o.json"])
        check(f"without a GPU: {expect.strip()!r}, exit 2", code == 2 and err == expect)


# ---------------------------------------------------------------------------------------------- report


def fake_report() -> dict:
    opts = tb.RunOptions()
    report = tb.new_report("NVIDIA H200", "2.11.0", "12.8", opts, 2 * 60 << 20)
    timing = tb.measure(lambda: None, SyntheticTimer(lambda: 0.5), tb.TimingOptions(min_reps=20))
    entry = {"index": 0, "axes": {"B": 16, "D": 16384}, "bytes_moved": 2 * 16 * 16384 * 4,
             "eager": tb._with_gbps(dict(timing), 2 * 16 * 16384 * 4),
             "compile": tb._status("mismatch", "3 elements outside", bad_elements=3, max_abs_err=float("nan"))}
    report["tasks"].append({"file": "tasks/01_relu.json", "name": "relu", "tolerance": {"atol": 1e-4, "rtol": 1e-4},
                            "workloads": [entry]})
    return report


def test_report_schema():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "baseline.json")
        tb.write_report(fake_report(), path)
        with open(path) as f:
            doc = json.load(f)  # strict JSON: the NaN became null
    types = {"tool": str, "version": int, "date": str, "gpu": str, "torch": str, "cuda": str, "tf32": bool,
             "tasks": list}
    for key, t in types.items():
        check(f"report.{key} is {t.__name__}", isinstance(doc.get(key), t))
    check("report names the tool", doc["tool"] == "torch_baseline" and doc["version"] == 1 and doc["tf32"] is False)
    task = doc["tasks"][0]
    check("task has file, name, workloads", {"file", "name", "workloads"} <= set(task))
    w = task["workloads"][0]
    check("workload has index, axes, bytes_moved", {"index", "axes", "bytes_moved"} <= set(w))
    eager = w["eager"]
    check("timed mode fields", eager["status"] == "ok" and all(
        isinstance(eager[k], (int, float)) for k in ("median_ms", "p20_ms", "p80_ms", "min_ms", "n", "gbps")))
    check("gbps = bytes / median", abs(eager["gbps"] - w["bytes_moved"] / 0.5e-3 / 1e9) < 1e-9)
    check("mismatch recorded, NaN as null", w["compile"]["status"] == "mismatch" and
          w["compile"]["max_abs_err"] is None and w["compile"]["bad_elements"] == 3)
    line = tb.table_line("relu", w, ("eager", "compile"))
    check("table line is one line naming both modes", "\n" not in line and "eager" in line and "mismatch" in line)


def test_continue_report():
    """A run cut short (a deadline) keeps the workloads it wrote; the next run with the same --out measures
    only the missing ones, and refuses a report measured otherwise."""
    relu = tb.load_contract(os.path.join(REPO, "tasks", "01_relu.json"))
    softmax = tb.load_contract(os.path.join(REPO, "tasks", "03_softmax.json"))
    opts = tb.RunOptions()
    fresh = lambda gpu="Fake GPU": tb.new_report(gpu, "2.0", "12.1", opts, 1 << 20)
    timing = {"status": "ok", "median_ms": 0.5, "p20_ms": 0.4, "p80_ms": 0.6, "min_ms": 0.3, "n": 20}
    asked = []

    def fake(contract, i):
        asked.append((contract.name, i))
        return {"index": i, "axes": contract.axis_values(i), "bytes_moved": contract.bytes_moved(i),
                "eager": dict(timing), "compile": dict(timing)}

    class Deadline(Exception):
        pass

    def cut_after(n):
        def measure(contract, i):
            if len(asked) == n:
                raise Deadline()
            return fake(contract, i)
        return measure

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "baseline.json")
        check("no report yet: a fresh one", tb.continue_report(out, fresh()) == fresh())
        try:
            tb.run_contracts([relu, softmax], "all", fresh(), out, cut_after(3), opts.modes)
            check("the deadline came", False)
        except Deadline:
            pass
        with open(out) as f:
            cut = json.load(f)
        check("a run cut short keeps the workloads it measured",
              [(t["name"], [w["index"] for w in t["workloads"]]) for t in cut["tasks"]] == [("relu", [0, 1]), ("softmax", [0])])
        check("no temporary file left", os.listdir(tmp) == ["baseline.json"])
        asked.clear()
        report = tb.continue_report(out, fresh())
        failed = tb.run_contracts([relu, softmax], "all", report, out, fake, opts.modes)
        check("continued: only the missing workloads measured", asked == [("softmax", 1)] and not failed)
        with open(out) as f:
            done = json.load(f)
        check("continued: every workload, in order, the kept ones unchanged",
              [(t["name"], [w["index"] for w in t["workloads"]]) for t in done["tasks"]] == [("relu", [0, 1]), ("softmax", [0, 1])]
              and done["tasks"][0] == cut["tasks"][0])
        asked.clear()
        tb.run_contracts([relu, softmax], "all", tb.continue_report(out, fresh()), out, fake, opts.modes)
        check("complete: nothing measured again", asked == [])
        # A workload the contract no longer has, or one cut short (a mode missing), is measured again.
        done["tasks"][1]["workloads"][1]["axes"] = {"B": 1}
        del done["tasks"][0]["workloads"][0]["compile"]
        tb.write_report(done, out)
        asked.clear()
        tb.run_contracts([relu, softmax], "all", tb.continue_report(out, fresh()), out, fake, opts.modes)
        check("changed or incomplete workloads measured again", asked == [("relu", 0), ("softmax", 1)])
        for bad, why in [(fresh("Other GPU"), "gpu"), (tb.new_report("Fake GPU", "2.0", "12.1", tb.RunOptions(seed=1), 1 << 20), "seed")]:
            try:
                tb.continue_report(out, bad)
                check(f"a report of another {why} is refused", False)
            except tb.ContractError as e:
                check(f"a report of another {why} is refused, in one line", f"measured with {why}" in str(e) and "\n" not in str(e))
        with open(out, "w") as f:
            f.write("{ not json")
        try:
            tb.continue_report(out, fresh())
            check("an unreadable report is refused", False)
        except tb.ContractError as e:
            check("an unreadable report is refused", "cannot continue it" in str(e))


# ---------------------------------------------------------------------------------------------- torch


def test_with_torch(torch):
    cpu = torch.device("cpu")
    with tempfile.TemporaryDirectory() as tmp:
        path = write(tmp, "dists.json", json.dumps({
            "name": "dists",
            "axes": {"N": {"type": "var"}, "K": {"type": "const", "value": 3}},
            "inputs": {
                "u": {"shape": ["N"], "dtype": "float32", "init": {"dist": "uniform", "low": -2, "high": 6}},
                "g": {"shape": ["N"], "dtype": "float64", "init": {"dist": "normal", "mean": 3, "std": 0.5}},
                "w": {"shape": [64, "N // 1000", "K", "K"], "dtype": "float32", "init": {"dist": "kaiming_uniform"}},
                "b": {"shape": [64], "dtype": "float32", "init": {"dist": "fan_in_uniform", "fan_in_of": "w"}},
                "r": {"shape": ["N"], "dtype": "int32", "init": {"dist": "randint", "low": -3, "high": 4}},
                "c": {"shape": ["N"], "dtype": "float32", "init": {"dist": "choice", "values": [-1, 1]}},
                "o": {"shape": [2, 2], "dtype": "float16", "init": {"dist": "ones"}},
                "z": {"shape": [], "dtype": "float32", "init": {"dist": "zeros"}},
                "k": {"shape": [5], "dtype": "bfloat16", "init": {"dist": "constant", "value": 2.5}},
                "flag": {"shape": ["N"], "dtype": "bool"},
                "idx": {"shape": ["N"], "dtype": "int64"},
            },
            "outputs": {"y": {"shape": ["N"], "dtype": "float32"}},
            "reference": "def run(u, g, w, b, r, c, o, z, k, flag, idx):\n    return u\n",
            "workloads": [{"N": 200000}],
        }))
        c = tb.load_contract(path)
    x = tb.draw_inputs(c, 0, seed=0, device=cpu)
    u, g, r = x["u"], x["g"], x["r"]
    check("uniform: dtype, bounds, mean", u.dtype == torch.float32 and float(u.min()) >= -2 and float(u.max()) < 6
          and abs(float(u.mean()) - 2) < 0.05)
    check("normal: mean and std", g.dtype == torch.float64 and abs(float(g.mean()) - 3) < 0.01
          and abs(float(g.std()) - 0.5) < 0.01)
    fan = 200 * 3 * 3
    bound = math.sqrt(2 / (1 + 5)) * math.sqrt(3 / fan)
    check("kaiming_uniform: bound and spread", x["w"].shape == (64, 200, 3, 3) and float(x["w"].abs().max()) <= bound * (1 + 1e-6)
          and float(x["w"].abs().max()) > 0.99 * bound)
    ref = torch.empty(64, 200, 3, 3)
    torch.manual_seed(tb.input_seed(0, "w"))
    torch.nn.init.kaiming_uniform_(ref, a=math.sqrt(5))
    check("kaiming_uniform equals torch.nn.init.kaiming_uniform_", torch.allclose(ref, x["w"], rtol=1e-6, atol=0))
    check("fan_in_uniform: bound 1/sqrt(fan_in of w)", float(x["b"].abs().max()) <= (1 + 1e-6) / math.sqrt(fan))
    check("randint: int32 in [low, high) with every value", r.dtype == torch.int32 and
          sorted(torch.unique(r).tolist()) == list(range(-3, 4)))
    check("choice: only the values, about half each", sorted(torch.unique(x["c"]).tolist()) == [-1.0, 1.0]
          and abs(float(x["c"].mean())) < 0.02)
    check("ones/zeros/constant", bool((x["o"] == 1).all()) and x["o"].dtype == torch.float16 and
          x["z"].shape == () and float(x["z"]) == 0 and bool((x["k"] == 2.5).all()))
    check("bool default: coin flips", x["flag"].dtype == torch.bool and abs(float(x["flag"].float().mean()) - .5) < .01)
    check("int64 default: randint [0, 10)", x["idx"].dtype == torch.int64 and int(x["idx"].min()) == 0
          and int(x["idx"].max()) == 9)
    again = tb.draw_inputs(c, 0, seed=0, device=cpu)
    other = tb.draw_inputs(c, 0, seed=1, device=cpu)
    check("same seed, same inputs", all(torch.equal(x[n], again[n]) for n in x))
    check("another seed, other inputs", not torch.equal(x["u"], other["u"]))

    relu = tb.load_contract(os.path.join(REPO, "tasks", "01_relu.json"))
    opts = tb.RunOptions(timing=tb.TimingOptions(min_reps=5, max_reps=5))
    entry = tb.measure_workload(relu, 1, cpu, opts, SyntheticTimer(lambda: 0.25), compile_fn=lambda f: f)
    check("relu small workload on the CPU: eager ok", entry["eager"]["status"] == "ok" and entry["eager"]["n"] == 5)
    check("relu small workload on the CPU: compile ok", entry["compile"]["status"] == "ok"
          and entry["compile"]["max_abs_err"] == 0.0 and "compile_s" in entry["compile"])
    check("relu entry: axes and bytes", entry["axes"] == {"B": 16, "D": 16384} and entry["bytes_moved"] == 2 * 16 * 16384 * 4)

    def off_by_a_bit(f):
        return lambda **kw: f(**kw) + 1e-3
    entry = tb.measure_workload(relu, 1, cpu, opts, SyntheticTimer(lambda: 0.25), compile_fn=off_by_a_bit)
    check("a wrong compiled output is a mismatch, not a time", entry["compile"]["status"] == "mismatch"
          and entry["compile"]["bad_elements"] == 16 * 16384 and "median_ms" not in entry["compile"])

    def nan_once(f):
        return lambda **kw: f(**kw).index_fill(1, torch.tensor([0]), float("nan"))
    entry = tb.measure_workload(relu, 1, cpu, opts, SyntheticTimer(lambda: 0.25), compile_fn=nan_once)
    check("NaN never passes", entry["compile"]["status"] == "mismatch" and entry["compile"]["bad_elements"] == 16)

    def broken(f):
        def fail(**kw):
            raise RuntimeError("inductor fell over\nmore detail")
        return fail
    entry = tb.measure_workload(relu, 1, cpu, opts, SyntheticTimer(lambda: 0.25), compile_fn=broken)
    check("a compile failure is an error with one line", entry["compile"]["status"] == "error"
          and entry["compile"]["message"] == "RuntimeError: inductor fell over" and entry["eager"]["status"] == "ok")

    with tempfile.TemporaryDirectory() as tmp:
        inf = tb.load_contract(write(tmp, "inf.json", relu_contract_text(
            reference="import torch\n\ndef run(x):\n    return torch.log(x - x)\n")))
        shape = tb.load_contract(write(tmp, "shape.json", relu_contract_text(
            reference="def run(x):\n    return x.sum(dim=1)\n")))
    entry = tb.measure_workload(inf, 1, cpu, opts, SyntheticTimer(lambda: 0.25), compile_fn=lambda f: f)
    check("a non-finite reference is reported, nothing timed", entry["eager"]["status"] == "nonfinite"
          and entry["compile"]["status"] == "not_run")
    entry = tb.measure_workload(shape, 1, cpu, opts, SyntheticTimer(lambda: 0.25), compile_fn=lambda f: f)
    check("a reference disagreeing with the declared shape is an error", entry["eager"]["status"] == "error"
          and "declared float32[16, 16384]" in entry["eager"]["message"])

    only_compile = tb.RunOptions(modes=("compile",), timing=tb.TimingOptions(min_reps=3, max_reps=3))
    entry = tb.measure_workload(relu, 1, cpu, only_compile, SyntheticTimer(lambda: 0.25), compile_fn=lambda f: f)
    check("--modes compile still checks against eager", set(entry) == {"index", "axes", "bytes_moved", "compile"}
          and entry["compile"]["status"] == "ok")


def test_on_gpu(torch):
    """The real path: CUDA events, L2 flush, torch.compile, on tasks/01_relu.json's small workload."""
    device = torch.device("cuda", torch.cuda.current_device())
    check("TF32 turned off", tb.disable_tf32() is None and not torch.backends.cuda.matmul.allow_tf32)
    timer = tb.CudaTimer(device)
    check(f"flush buffer is 2x L2 ({timer.flush_bytes >> 20} MiB)", timer.flush_bytes ==
          2 * torch.cuda.get_device_properties(device).L2_cache_size)
    relu = tb.load_contract(os.path.join(REPO, "tasks", "01_relu.json"))
    opts = tb.RunOptions(timing=tb.TimingOptions(min_reps=5, max_reps=30))
    entry = tb.measure_workload(relu, 1, device, opts, timer)
    print("     " + tb.table_line("relu", entry, opts.modes))
    for m in tb.MODES:
        r = entry[m]
        check(f"GPU {m}: ok, 5..30 reps, p20 <= median <= p80", r["status"] == "ok" and 5 <= r["n"] <= 30
              and r["p20_ms"] <= r["median_ms"] <= r["p80_ms"] and r["min_ms"] > 0)
    x = tb.draw_inputs(relu, 1, 0, device)["x"]
    check("inputs land on the GPU, same values as on the CPU",
          x.is_cuda and torch.equal(x.cpu(), tb.draw_inputs(relu, 1, 0, torch.device("cpu"))["x"]))


def main() -> int:
    test_eval_dim()
    test_percentile_and_ci()
    test_measure_loop()
    test_contracts()
    test_input_seed()
    test_arguments()
    test_report_schema()
    test_continue_report()
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None:
        print("skipped: torch not installed (input distributions, the CPU run of tasks/01_relu.json)")
    else:
        test_with_torch(torch)
        if torch.cuda.is_available():
            test_on_gpu(torch)
        else:
            print("skipped: no CUDA device (the GPU path)")
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
