"""The PyTorch extensions of `kevo export --torch`, checked on a GPU: each op is built against the
torch installed here, run on the contract's inputs for every validated workload and compared with
the contract's reference run by torch; its time (CUDA events, cold L2, the same gate as kevo's
timer: tools/torch_baseline.py's CudaTimer) is compared with the time kevo measures for the same
variant (`kevo eval` of the exported candidate in the same run; `--recorded`: the campaign's report), on workloads kevo timed at --min-ms (0.1 ms) or more. Exits 1 when
an op is wrong, slower or faster than kevo's figure by more than --tolerance (default 5%), or an
argument error (dtype, shape, device, layout) is not the op's own.

    kevo export results/campaigns/h200-random-4tasks.h5 --torch --out OUT
    python3 bench/torch_extension_check.py OUT results/campaigns/h200-random-4tasks.h5 \\
        --tasks layer_norm,hinge_loss,linear_scale_leaky_relu --kevo build/kevo
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import torch_baseline as tb  # noqa: E402


def load_module(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kevo_figures(kevo, campaign):
    """Per task, per workload index: the best variant's median as kevo measured it (ms)."""
    report = json.loads(subprocess.run([kevo, "report", campaign, "--json"], check=True, capture_output=True,
                                       text=True).stdout)
    return {t["task"]: {w["workload"]: w["best_ms"] for w in t["workloads"]} for t in report["tasks"]}


def kevo_remeasured(kevo, out_dir, task, max_seconds):
    """The exported candidate re-timed by `kevo eval` now, on this GPU (the export writes it beside the
    extension as TASK.cu): per workload index, its median (ms). Same run, same GPU: the comparison the
    check is about, free of the day-to-day drift of a campaign's recorded figures."""
    out = os.path.join(out_dir, task + ".eval.json")
    subprocess.run([kevo, "eval", os.path.join(out_dir, task + ".json"), os.path.join(out_dir, task + ".cu"),
                    "--trials", "1", "--gpus", "0", "--max-seconds", str(max_seconds), "--json", out],
                   check=True, capture_output=True, text=True)
    m = json.load(open(out))[0]
    if m["status"] != "ok":
        raise SystemExit(f"{task}: kevo eval of the exported candidate: {m['status']}")
    return {w["workload"]: (w["candidate"]["median_ms"] if w.get("timed", True) else 0) for w in m["workloads"]}


def contract_of(out_dir, task):
    """The contract the campaign measured (kevo writes it beside the header)."""
    path = os.path.join(out_dir, task + ".json")
    if not os.path.exists(path):
        raise SystemExit(f"{path}: missing (kevo export --torch writes the contract beside the extension)")
    return tb.load_contract(path)


def error_paths(op, contract, inputs):
    """Wrong dtype, wrong shape, a CPU tensor, a non-contiguous one: each the op's own one-line error."""
    failures = []
    first = contract.inputs[0].name
    cases = {
        "dtype": lambda x: x.to(torch.float64 if x.dtype != torch.float64 else torch.float32),
        "shape": lambda x: x.reshape(-1)[:-1] if x.numel() > 1 else x.reshape(1, 1),
        "device": lambda x: x.cpu(),
        "contiguity": lambda x: (x.permute(*reversed(range(x.dim()))).contiguous().permute(*reversed(range(x.dim())))
                                 if sum(n > 1 for n in x.shape) > 1 else None),
    }
    for what, change in cases.items():
        bad = change(inputs[first])
        if bad is None:
            continue
        args = [bad if t.name == first else inputs[t.name] for t in contract.inputs]
        try:
            op(*args)
            failures.append(f"{what}: accepted")
        except RuntimeError as e:
            if "kevo::" not in str(e):
                failures.append(f"{what}: not the op's error: {str(e).splitlines()[0]}")
    return failures


def error_paths_apart(out_dir, task, index):
    """error_paths in a child process, so that an op which crashes on bad input (rather than raising)
    is reported as such and the other results survive."""
    r = subprocess.run([sys.executable, os.path.abspath(__file__), out_dir, "-", "--tasks", task,
                        "--error-paths-of", str(index)], capture_output=True, text=True)
    if r.returncode < 0:
        return [f"the op crashed on bad input (signal {-r.returncode})"]
    return [l for l in r.stdout.splitlines() if l] if r.returncode == 0 else [f"the check failed: {r.stderr[-300:]}"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="the folder kevo export --torch wrote")
    ap.add_argument("campaign", help="the campaign file it exported from")
    ap.add_argument("--tasks", required=True, help="comma-separated task names")
    ap.add_argument("--kevo", default=os.path.join(ROOT, "build", "kevo"))
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--recorded", action="store_true",
                    help="compare with the campaign's recorded figures instead of re-timing the candidate with kevo eval now")
    ap.add_argument("--min-ms", type=float, default=0.1,
                    help="time only workloads kevo measured at this or more (a few-us kernel is within the events' noise)")
    ap.add_argument("--error-paths-of", type=int, default=-1, help=argparse.SUPPRESS)  # the child of error_paths_apart
    a = ap.parse_args()
    tb.disable_tf32()
    device = torch.device("cuda", 0)
    if a.error_paths_of >= 0:
        contract = contract_of(a.out, a.tasks)
        op = load_module(os.path.join(a.out, a.tasks + "_torch.py")).load()
        print("\n".join(error_paths(op, contract, tb.draw_inputs(contract, a.error_paths_of, 1, device))))
        return 0
    timer = tb.CudaTimer(device)
    recorded = kevo_figures(a.kevo, a.campaign)
    failed = 0
    for task in a.tasks.split(","):
        contract = contract_of(a.out, task)
        figures = {task: recorded[task] if a.recorded else kevo_remeasured(a.kevo, a.out, task, 2)}
        op = load_module(os.path.join(a.out, task + "_torch.py")).load()
        reference = tb.load_reference(contract)
        for index, kevo_ms in sorted(figures[task].items()):
            inputs = tb.draw_inputs(contract, index, 1, device)
            args = [inputs[t.name] for t in contract.inputs]
            outs = tb.as_tuple(op(*args))
            refs = tb.as_tuple(reference(**inputs))
            cmp = tb.compare(outs, refs, contract.atol, contract.rtol)
            line = f"{task} workload {index}: "
            ok = cmp["bad_elements"] == 0
            line += "correct" if ok else f"WRONG ({cmp})"
            if kevo_ms and kevo_ms >= a.min_ms:  # 0: a workload kevo checked without timing
                t = tb.measure(lambda: op(*args), timer, tb.TimingOptions(max_seconds=10))
                ratio = t["median_ms"] / kevo_ms
                within = abs(ratio - 1) <= a.tolerance
                line += f", {t['median_ms']:.4f} ms against kevo's {kevo_ms:.4f} ms ({100 * (ratio - 1):+.1f}%)"
                ok = ok and within
            for f in error_paths_apart(a.out, task, index):
                line += f"; error path {f}"
                ok = False
            print(line + ("" if ok else "  FAIL"), flush=True)
            failed += not ok
    print("ok" if not failed else f"{failed} FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
