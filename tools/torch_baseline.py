"""PyTorch eager and torch.compile baselines for kevo task contracts, timed with kevo's cold-L2 protocol."""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import linecache
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

TOOL = "torch_baseline"
VERSION = 1
MODES = ("eager", "compile")
COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")
ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "bool": 1}
FLOATING = {"float32", "float64", "float16", "bfloat16"}
DISTS = {  # parameter -> default (None: required)
    "uniform": {"low": 0.0, "high": 1.0},
    "normal": {"mean": 0.0, "std": 1.0},
    "kaiming_uniform": {"a": math.sqrt(5.0)},
    "fan_in_uniform": {"fan_in_of": None},
    "randint": {"low": 0, "high": 1},
    "choice": {"values": None},
    "ones": {},
    "zeros": {},
    "constant": {"value": None},
}
TOP_LEVEL_FIELDS = {"name", "description", "axes", "inputs", "outputs", "reference", "workloads", "tolerance",
                    "notes", "op_type", "tags", "constraints"}
FALLBACK_L2_BYTES = 128 << 20
MEMORY_FRACTION = 0.8  # a workload runs only if its inputs and outputs fit in this much of the free memory
COMPARE_CHUNK = 1 << 24  # elements compared at a time, so checking a 4 GiB output needs no 8 GiB temporary


class ContractError(Exception):
    """A contract this tool cannot use; the message is the whole line to print."""


# ---------------------------------------------------------------------------------------------- shapes


def eval_dim(expr: str, axes: dict[str, int]) -> int:
    """Evaluates a shape expression such as "(L + 2*P - K) // S + 1" over axis sizes, without eval()."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"bad size expression '{expr}': {e.msg}") from None
    binary = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in axes:
                raise ValueError(f"unknown axis '{node.id}' in '{expr}'")
            return axes[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = value(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in binary:
            a, b = value(node.left), value(node.right)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0:
                raise ValueError(f"division by zero in '{expr}'")
            return binary[type(node.op)](a, b)
        raise ValueError(f"'{expr}' may use only integers, axis names, + - * // % and parentheses")

    return value(tree.body)


# ---------------------------------------------------------------------------------------------- contracts


@dataclass
class Tensor:
    name: str
    shape: list  # entries: int or expression string
    dtype: str
    init: dict  # inputs only: {"dist": ..., parameters with defaults filled in}


@dataclass
class Contract:
    file: str
    name: str
    axes: dict  # name -> None (var) or int (const)
    inputs: list
    outputs: list
    reference: str
    workloads: list  # each a dict of var axis sizes
    atol: float
    rtol: float

    def axis_values(self, index: int) -> dict[str, int]:
        values = dict(self.workloads[index])
        values.update({k: v for k, v in self.axes.items() if v is not None})
        return values

    def shape_of(self, t: Tensor, axes: dict[str, int]) -> list[int]:
        return [d if isinstance(d, int) else eval_dim(d, axes) for d in t.shape]

    def bytes_moved(self, index: int) -> int:
        """Each input read once and each output written once: the floor of any kernel's traffic."""
        axes = self.axis_values(index)
        return sum(math.prod(self.shape_of(t, axes)) * ITEMSIZE[t.dtype] for t in self.inputs + self.outputs)


def _number(v, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ContractError(f"{where}: must be a number")
    return v


def _read_tensor(file: str, section: str, name: str, spec, axes: dict) -> Tensor:
    where = f"{file}: {section}.{name}"
    if not isinstance(spec, dict) or "shape" not in spec or "dtype" not in spec:
        raise ContractError(f"{where}: needs 'shape' and 'dtype'")
    shape = [] if spec["shape"] is None else spec["shape"]
    if not isinstance(shape, list):
        raise ContractError(f"{where}.shape: must be an array")
    for i, d in enumerate(shape):
        if isinstance(d, bool) or not isinstance(d, (int, str)):
            raise ContractError(f"{where}.shape[{i}]: must be an axis name, an integer or an expression")
        if isinstance(d, str):
            try:
                eval_dim(d, {a: 1 for a in axes})
            except ValueError as e:
                if "division by zero" not in str(e):  # only the names and syntax can be checked before a workload
                    raise ContractError(f"{where}.shape[{i}]: {e}") from None
    dtype = spec["dtype"]
    if dtype not in ITEMSIZE:
        raise ContractError(f"{where}.dtype: unsupported dtype '{dtype}'")
    init = {}
    if section == "inputs":
        init = _read_init(f"{where}.init", spec.get("init"), dtype)
    return Tensor(name, shape, dtype, init)


def _read_init(where: str, spec, dtype: str) -> dict:
    if spec is None:  # the defaults kevo uses
        if dtype in FLOATING:
            return {"dist": "uniform", "low": 0.0, "high": 1.0}
        return {"dist": "randint", "low": 0, "high": 2 if dtype == "bool" else 10}
    if not isinstance(spec, dict) or spec.get("dist") not in DISTS:
        raise ContractError(f"{where}.dist: expected one of {', '.join(DISTS)}")
    init = {"dist": spec["dist"]}
    for key, default in DISTS[spec["dist"]].items():
        if key not in spec and default is None:
            raise ContractError(f"{where}: missing field '{key}'")
        init[key] = spec.get(key, default)
    extra = set(spec) - set(init)
    if extra:
        raise ContractError(f"{where}: unknown field '{sorted(extra)[0]}'")
    if init["dist"] == "choice":
        if not isinstance(init["values"], list) or not init["values"]:
            raise ContractError(f"{where}.values: must be a non-empty array")
        init["values"] = [_number(v, f"{where}.values") for v in init["values"]]
    elif init["dist"] == "fan_in_uniform":
        if not isinstance(init["fan_in_of"], str):
            raise ContractError(f"{where}.fan_in_of: must name an input")
    else:
        for key in DISTS[init["dist"]]:
            init[key] = _number(init[key], f"{where}.{key}")
    if init["dist"] in ("uniform", "randint") and not init["low"] < init["high"]:
        raise ContractError(f"{where}: low must be below high")
    if init["dist"] in ("uniform", "normal", "kaiming_uniform", "fan_in_uniform") and dtype not in FLOATING:
        raise ContractError(f"{where}.dist: '{init['dist']}' draws real numbers but the input is {dtype}")
    return init


def _reference_params(file: str, source: str) -> list[str]:
    """The parameter names of the reference's run() (or of its only function), read without running it."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise ContractError(f"{file}: reference:{e.lineno}:{e.offset}: {e.msg}") from None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    chosen = [d for d in defs if d.name == "run"] or (defs if len(defs) == 1 else [])
    if not chosen:
        raise ContractError(f"{file}: reference: defines no function run()")
    return [a.arg for a in chosen[0].args.args]


def load_contract(path: str) -> Contract:
    """Reads and checks what this tool relies on; `kevo check` is the full validator."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise ContractError(f"{path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ContractError(f"{path}:{e.lineno}:{e.colno}: {e.msg}") from None
    except UnicodeDecodeError:
        raise ContractError(f"{path}: not UTF-8 text") from None
    if not isinstance(doc, dict):
        raise ContractError(f"{path}: a contract is a JSON object")
    for field in ("name", "axes", "inputs", "outputs", "reference", "workloads"):
        if field not in doc:
            raise ContractError(f"{path}: missing required field '{field}'")
    unknown = sorted(set(doc) - TOP_LEVEL_FIELDS)
    if unknown:
        raise ContractError(f"{path}: unknown field '{unknown[0]}'")
    if not isinstance(doc["name"], str) or not isinstance(doc["reference"], str):
        raise ContractError(f"{path}: 'name' and 'reference' must be strings")

    axes = {}
    if not isinstance(doc["axes"], dict):
        raise ContractError(f"{path}: axes: must be an object")
    for name, spec in doc["axes"].items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind == "var":
            axes[name] = None
        elif kind == "const" and isinstance(spec.get("value"), int) and not isinstance(spec["value"], bool):
            axes[name] = spec["value"]
        else:
            raise ContractError(f"{path}: axes.{name}: expected {{\"type\": \"var\"}} or "
                                f"{{\"type\": \"const\", \"value\": N}}")

    sections = {}
    for section in ("inputs", "outputs"):
        if not isinstance(doc[section], dict) or not doc[section]:
            raise ContractError(f"{path}: {section}: must be a non-empty object")
        sections[section] = [_read_tensor(path, section, n, s, axes) for n, s in doc[section].items()]
    input_names = [t.name for t in sections["inputs"]]
    for t in sections["inputs"]:
        if t.init["dist"] == "fan_in_uniform":
            weight = next((w for w in sections["inputs"] if w.name == t.init["fan_in_of"]), None)
            if weight is None or len(weight.shape) < 2:
                raise ContractError(f"{path}: inputs.{t.name}.init.fan_in_of: "
                                    f"'{t.init['fan_in_of']}' is not an input of rank 2 or more")
        if t.init["dist"] == "kaiming_uniform" and len(t.shape) < 2:
            raise ContractError(f"{path}: inputs.{t.name}.init: kaiming_uniform needs a tensor of rank 2 or more")
    params = _reference_params(path, doc["reference"])
    if sorted(params) != sorted(input_names):
        raise ContractError(f"{path}: reference: run({', '.join(params)}) must take exactly the inputs "
                            f"({', '.join(input_names)})")

    if not isinstance(doc["workloads"], list) or not doc["workloads"]:
        raise ContractError(f"{path}: workloads: must be a non-empty array")
    workloads = []
    for i, w in enumerate(doc["workloads"]):
        if isinstance(w, dict) and isinstance(w.get("axes"), dict):  # FlashInfer-Bench's layout
            w = w["axes"]
        if not isinstance(w, dict):
            raise ContractError(f"{path}: workloads[{i}]: must be an object of axis sizes")
        # "weight" and "timed" say how kevo's fitness uses the workload; the baseline times every one.
        w = {k: v for k, v in w.items() if k not in ("weight", "timed")}
        for name, size in w.items():
            if axes.get(name, 0) is not None:
                raise ContractError(f"{path}: workloads[{i}].{name}: not a var axis")
            if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
                raise ContractError(f"{path}: workloads[{i}].{name}: size must be a positive integer")
        missing = [a for a, v in axes.items() if v is None and a not in w]
        if missing:
            raise ContractError(f"{path}: workloads[{i}]: gives no size for axis '{missing[0]}'")
        workloads.append(dict(w))

    tol = doc.get("tolerance", {})
    if not isinstance(tol, dict):
        raise ContractError(f"{path}: tolerance: must be an object")
    atol = _number(tol.get("atol", 1e-4), f"{path}: tolerance.atol")
    rtol = _number(tol.get("rtol", 1e-4), f"{path}: tolerance.rtol")
    contract = Contract(path, doc["name"], axes, sections["inputs"], sections["outputs"], doc["reference"],
                        workloads, atol, rtol)
    for i in range(len(workloads)):
        values = contract.axis_values(i)
        for t in contract.inputs + contract.outputs:
            try:
                shape = contract.shape_of(t, values)
            except ValueError as e:
                raise ContractError(f"{path}: workloads[{i}]: the shape of '{t.name}': {e}") from None
            if any(d <= 0 for d in shape):
                raise ContractError(f"{path}: workloads[{i}]: the shape of '{t.name}' is {shape}: "
                                    f"every dim must be positive")
    return contract


# ---------------------------------------------------------------------------------------------- statistics


def percentile(sorted_xs: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def median_ci95(xs: list[float]) -> tuple[float, float]:
    """Distribution-free 95% interval for the median from order statistics: ranks n/2 -+ 1.96*sqrt(n)/2."""
    s = sorted(xs)
    n = len(s)
    half = 0.98 * math.sqrt(n)
    lo = max(1, math.floor(n / 2 - half))
    hi = min(n, math.ceil(1 + n / 2 + half))
    return s[lo - 1], s[hi - 1]


def summarize(times_ms: list[float], target_ci: float) -> dict:
    s = sorted(times_ms)
    med = statistics.median(s)
    lo, hi = median_ci95(s)
    half = (hi - lo) / 2
    return {"median_ms": med, "p20_ms": percentile(s, 0.2), "p80_ms": percentile(s, 0.8), "min_ms": s[0],
            "n": len(s), "ci95_half_width_ms": half, "ci95_rel": half / med if med > 0 else math.inf,
            "converged": med > 0 and half <= target_ci * med}


@dataclass
class TimingOptions:
    min_reps: int = 20
    max_reps: int = 2000
    target_ci: float = 0.01
    warmup: int = 3
    max_seconds: float = 30.0


def measure(fn: Callable[[], object], timer, opts: TimingOptions) -> dict:
    """Repeats fn until the median's 95% half-width is under target_ci of it, or max_reps (or max_seconds)."""
    timer.warm_up(fn, opts.warmup)
    times: list[float] = []
    telemetry: dict = {}
    started = time.monotonic()
    batch = opts.min_reps
    while True:
        batch_times, sample = timer.time_batch(fn, batch, sample_telemetry=not times)
        times += batch_times
        telemetry = telemetry or sample
        stats = summarize(times, opts.target_ci)
        out_of_time = time.monotonic() - started > opts.max_seconds
        if stats["converged"] or len(times) >= opts.max_reps or out_of_time:
            break
        batch = min(opts.max_reps - len(times), max(10, len(times) // 5))
    return {"status": "ok", **stats, **telemetry}


# ---------------------------------------------------------------------------------------------- GPU timing


def gpu_telemetry(device) -> dict:
    """SM clock and temperature through pynvml or nvidia-smi; empty when neither answers."""
    import torch
    props = torch.cuda.get_device_properties(device)
    uuid = str(getattr(props, "uuid", "") or "")
    if uuid and not uuid.startswith("GPU-"):
        uuid = "GPU-" + uuid
    try:
        import pynvml
        pynvml.nvmlInit()
        handle = (pynvml.nvmlDeviceGetHandleByUUID(uuid) if uuid
                  else pynvml.nvmlDeviceGetHandleByIndex(device.index or 0))
        return {"sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                "temperature_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)}
    except Exception:
        pass
    for ident in ([uuid] if uuid else []) + [str(device.index or 0)]:
        if not shutil.which("nvidia-smi"):
            break
        try:
            out = subprocess.run(["nvidia-smi", "-i", ident, "--query-gpu=clocks.sm,temperature.gpu",
                                  "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=5, check=True).stdout
            clock, temp = (int(v) for v in out.strip().splitlines()[0].split(","))
            return {"sm_clock_mhz": clock, "temperature_c": temp}
        except Exception:
            continue
    return {}


GATE_CYCLES = 600_000


class CudaTimer:
    """Times calls with CUDA events on a cold L2: a buffer of 2x the L2 size is written before each call."""

    def __init__(self, device):
        import torch
        self.torch, self.device = torch, device
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or FALLBACK_L2_BYTES
        self.flush_bytes = 2 * l2
        self.flush_buffer = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=device)
        self.flushes = 0

    def flush(self):
        self.flushes += 1
        self.flush_buffer.fill_(self.flushes & 0x7FFFFFFF)

    def warm_up(self, fn, count: int):
        for _ in range(count):
            self.flush()
            fn()
        self.torch.cuda.synchronize(self.device)

    def time_batch(self, fn, count: int, sample_telemetry: bool = False) -> tuple[list[float], dict]:
        Event = self.torch.cuda.Event
        pairs = [(Event(enable_timing=True), Event(enable_timing=True)) for _ in range(count)]
        sleep = getattr(self.torch.cuda, "_sleep", None)
        for start, end in pairs:
            self.flush()
            # kevo's gate: the GPU is kept busy while the host queues the call, so the span
            # measures the GPU's work and not the host's launch time (a spin of ~0.3 ms at 2 GHz).
            if sleep is not None:
                sleep(GATE_CYCLES)
            start.record()
            fn()
            end.record()
        telemetry = gpu_telemetry(self.device) if sample_telemetry else {}  # sampled while the batch runs
        self.torch.cuda.synchronize(self.device)
        return [start.elapsed_time(end) for start, end in pairs], telemetry


# ---------------------------------------------------------------------------------------------- inputs and reference


def torch_dtype(name: str):
    import torch
    return getattr(torch, name)


def fan_in(shape: list[int]) -> int:
    """Dim 1 times the product of the dims after it, as torch.nn.init computes it."""
    return math.prod(shape[1:]) if len(shape) > 1 else 1


def input_seed(seed: int, name: str) -> int:
    """kevo's per-input seed (FNV-style over the name), so these inputs equal those kevo's oracle draws."""
    h = seed & 0xFFFFFFFFFFFFFFFF
    for c in name.encode("utf-8"):
        h = ((h * 1099511628211) & 0xFFFFFFFFFFFFFFFF) ^ c
    return h


def draw_input(contract: Contract, t: Tensor, axes: dict[str, int], seed: int):
    """One input on the CPU, drawn exactly as kevo's oracle draws it (src/eval/inputs.cpp)."""
    import torch
    shape = contract.shape_of(t, axes)
    dtype = torch_dtype(t.dtype)
    gen = torch.Generator(device="cpu").manual_seed(input_seed(seed, t.name))
    init, dist = t.init, t.init["dist"]

    def uniform(low, high):
        return torch.empty(shape, dtype=dtype).uniform_(low, high, generator=gen)

    if dist == "uniform":
        return uniform(init["low"], init["high"])
    if dist == "normal":
        return torch.empty(shape, dtype=dtype).normal_(init["mean"], init["std"], generator=gen)
    if dist == "kaiming_uniform":  # torch.nn.init.kaiming_uniform_(w, a): fan_in mode, leaky_relu gain
        gain = math.sqrt(2.0 / (1.0 + init["a"] ** 2))
        bound = gain * math.sqrt(3.0 / fan_in(shape))
        return uniform(-bound, bound)
    if dist == "fan_in_uniform":
        weight = next(w for w in contract.inputs if w.name == init["fan_in_of"])
        bound = 1.0 / math.sqrt(fan_in(contract.shape_of(weight, axes)))
        return uniform(-bound, bound)
    if dist == "randint":
        return torch.randint(int(init["low"]), int(init["high"]), shape, dtype=dtype, generator=gen)
    if dist == "choice":
        values = torch.tensor(init["values"], dtype=torch.float64).to(dtype)
        idx = torch.randint(0, len(init["values"]), (math.prod(shape),), dtype=torch.int64, generator=gen)
        return values.index_select(0, idx).reshape(shape)
    if dist == "ones":
        return torch.ones(shape, dtype=dtype)
    if dist == "zeros":
        return torch.zeros(shape, dtype=dtype)
    if dist == "constant":
        return torch.full(shape, init["value"], dtype=dtype)
    raise AssertionError(f"unknown distribution {dist}")


def draw_inputs(contract: Contract, index: int, seed: int, device) -> dict:
    axes = contract.axis_values(index)
    return {t.name: draw_input(contract, t, axes, seed).to(device) for t in contract.inputs}


def load_reference(contract: Contract) -> Callable:
    """Runs the reference source in a namespace with torch, F and math bound, and returns its run()."""
    import torch
    import torch.nn.functional as F
    filename = f"<{contract.file}:reference>"
    linecache.cache[filename] = (len(contract.reference), None, contract.reference.splitlines(True), filename)
    namespace = {"torch": torch, "F": F, "math": math, "__name__": "kevo_reference"}
    exec(compile(contract.reference, filename, "exec"), namespace)
    if callable(namespace.get("run")):
        return namespace["run"]
    funcs = [v for v in namespace.values() if callable(v) and getattr(v, "__code__", None)
             and v.__code__.co_filename == filename]
    return funcs[0]


def as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def check_declared(outs: tuple, contract: Contract, axes: dict[str, int]) -> str | None:
    """Why the reference's outputs disagree with the declared outputs, or None."""
    import torch
    if len(outs) != len(contract.outputs):
        return f"run() returned {len(outs)} values, the contract declares {len(contract.outputs)} outputs"
    for out, decl in zip(outs, contract.outputs):
        if not isinstance(out, torch.Tensor):
            return f"output '{decl.name}' is a {type(out).__name__}, not a tensor"
        shape = contract.shape_of(decl, axes)
        if list(out.shape) != shape or out.dtype != torch_dtype(decl.dtype):
            return (f"output '{decl.name}' is {str(out.dtype).removeprefix('torch.')}{list(out.shape)}, "
                    f"declared {decl.dtype}{shape}")
    return None


def all_finite(outs: tuple) -> bool:
    import torch
    return all(bool(torch.isfinite(o).all()) for o in outs if o.is_floating_point())


def compare(outs: tuple, refs: tuple, atol: float, rtol: float) -> dict:
    """Counts elements failing |out - ref| <= atol + rtol * |ref| (NaN never passes), chunk by chunk."""
    import torch
    bad, max_err = 0, 0.0
    for out, ref in zip(outs, refs):
        if out.shape != ref.shape or out.dtype != ref.dtype:
            return {"bad_elements": -1, "max_abs_err": None,
                    "message": f"got {out.dtype}{list(out.shape)}, expected {ref.dtype}{list(ref.shape)}"}
        a, b = out.reshape(-1), ref.reshape(-1)
        for i in range(0, a.numel(), COMPARE_CHUNK):
            x = a[i:i + COMPARE_CHUNK].to(torch.float64)
            y = b[i:i + COMPARE_CHUNK].to(torch.float64)
            err = (x - y).abs()
            failing = ~(err <= atol + rtol * y.abs())
            bad += int(failing.sum())
            finite = err[torch.isfinite(err)]
            if finite.numel():
                max_err = max(max_err, float(finite.max()))
    return {"bad_elements": bad, "max_abs_err": max_err}


# ---------------------------------------------------------------------------------------------- workloads


@dataclass
class RunOptions:
    modes: tuple = MODES
    compile_mode: str = "default"
    seed: int = 0
    timing: TimingOptions = None

    def __post_init__(self):
        self.timing = self.timing or TimingOptions()


def default_compile(compile_mode: str) -> Callable:
    def compile_fn(fn):
        import torch
        import torch._dynamo
        torch._dynamo.reset()  # a fresh, shape-specialised graph per workload, as a user tuning one shape gets
        return torch.compile(fn, mode=compile_mode, dynamic=False)
    return compile_fn


def _status(status: str, message: str = "", **extra) -> dict:
    entry = {"status": status, **extra}
    if message:
        entry["message"] = message
    return entry


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def _with_gbps(result: dict, bytes_moved: int) -> dict:
    if result.get("status") == "ok" and result["median_ms"] > 0:
        result["gbps"] = bytes_moved / (result["median_ms"] * 1e-3) / 1e9
    return result


def measure_workload(contract: Contract, index: int, device, opts: RunOptions, timer,
                     compile_fn: Callable | None = None) -> dict:
    """Checks and times one workload in each requested mode; the same path runs on the GPU and, in tests, the CPU."""
    import torch
    axes = contract.axis_values(index)
    moved = contract.bytes_moved(index)
    entry = {"index": index, "axes": axes, "bytes_moved": moved}

    def set_all(result: dict, modes=opts.modes):
        for m in modes:
            entry[m] = dict(result)
        return entry

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        if moved > MEMORY_FRACTION * free:
            return set_all(_status("skipped_memory", f"inputs and outputs take {moved / 1e9:.2f} GB, "
                                   f"80% of the free memory is {MEMORY_FRACTION * free / 1e9:.2f} GB"))
    compile_fn = compile_fn or default_compile(opts.compile_mode)
    inputs, refs = {}, ()
    try:
        inputs = draw_inputs(contract, index, opts.seed, device)
        run = load_reference(contract)
        refs = as_tuple(run(**inputs))
        sync()
        problem = check_declared(refs, contract, axes)
        if problem:
            set_all(_status("not_run", "the eager reference failed"))
            entry["eager"] = _status("error", problem)
            return entry
        if not all_finite(refs):
            set_all(_status("not_run", "the eager reference failed"))
            entry["eager"] = _status("nonfinite", "the reference's outputs hold NaN or infinite values")
            return entry
        if "eager" in opts.modes:
            entry["eager"] = _with_gbps(measure(lambda: run(**inputs), timer, opts.timing), moved)
        if "compile" in opts.modes:
            entry["compile"] = _measure_compiled(run, inputs, refs, contract, timer, opts, compile_fn, sync, moved)
    except torch.cuda.OutOfMemoryError as e:
        for m in opts.modes:
            if m not in entry or entry[m].get("status") != "ok":
                entry[m] = _status("skipped_memory", _first_line(e))
    except Exception as e:  # the eager reference itself failed
        set_all(_status("error", _first_line(e)), [m for m in opts.modes if m not in entry])
    finally:
        del inputs, refs
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return entry


def _measure_compiled(run, inputs, refs, contract, timer, opts, compile_fn, sync, moved) -> dict:
    import torch
    try:
        started = time.monotonic()
        compiled = compile_fn(run)
        outs = as_tuple(compiled(**inputs))
        sync()
        compile_s = time.monotonic() - started
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as e:
        return _status("error", _first_line(e))
    diff = compare(outs, refs, contract.atol, contract.rtol) if len(outs) == len(refs) else \
        {"bad_elements": -1, "max_abs_err": None, "message": f"{len(outs)} outputs, expected {len(refs)}"}
    del outs
    if diff["bad_elements"] != 0:
        return _status("mismatch", diff.pop("message", f"{diff['bad_elements']} elements outside "
                                                       f"atol={contract.atol} rtol={contract.rtol}"), **diff)
    result = measure(lambda: compiled(**inputs), timer, opts.timing)
    result["compile_s"] = compile_s
    result["max_abs_err"] = diff["max_abs_err"]
    return _with_gbps(result, moved)


# ---------------------------------------------------------------------------------------------- report


def new_report(gpu: str, torch_version: str, cuda_version: str | None, opts: RunOptions, flush_bytes: int) -> dict:
    return {
        "tool": TOOL, "version": VERSION,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": gpu, "torch": torch_version, "cuda": cuda_version, "tf32": False,
        "seed": opts.seed, "compile_mode": opts.compile_mode, "modes": list(opts.modes),
        "protocol": {"timer": "cuda_events", "gate": "torch.cuda._sleep before each start event",
                     "flush_bytes": flush_bytes, "warmup": opts.timing.warmup,
                     "min_reps": opts.timing.min_reps, "max_reps": opts.timing.max_reps,
                     "target_ci": opts.timing.target_ci, "max_seconds": opts.timing.max_seconds,
                     "ci": "order-statistic 95% interval of the median",
                     "inputs": "kevo's per-input seeded CPU draws (src/eval/inputs.cpp), copied to the device"},
        "tasks": [],
    }


def _json_safe(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_safe(x) for x in v]
    return v


def write_report(report: dict, path: str):
    """Written after every workload (atomically: a temporary file renamed over it), so a run cut short keeps
    what it measured and `--out` continues from there."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(_json_safe(report), f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


# What a report was measured with: a report continued (--out existing) must have been measured the same way.
SETTINGS = ("tool", "version", "gpu", "torch", "cuda", "tf32", "seed", "compile_mode", "modes", "protocol")


def continue_report(path: str, fresh: dict) -> dict:
    """The report at `path`, to be continued (its tasks and workloads kept), or `fresh` when there is none.
    Raises ContractError when it cannot be read or was measured otherwise than `fresh` would be."""
    if not os.path.exists(path):
        return fresh
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ContractError(f"{path}: cannot continue it ({e}): remove it or give another --out") from None
    if not isinstance(doc, dict) or doc.get("tool") != TOOL or not isinstance(doc.get("tasks"), list):
        raise ContractError(f"{path}: not a {TOOL} report: remove it or give another --out")
    plain = json.loads(json.dumps(_json_safe(fresh)))  # as the file would hold it
    for key in SETTINGS:
        if doc.get(key) != plain.get(key):
            raise ContractError(f"{path}: measured with {key} {json.dumps(doc.get(key))}, this run's is "
                                f"{json.dumps(plain.get(key))}: remove it or give another --out")
    return doc


def _kept(entry, contract: Contract, modes) -> bool:
    """Whether a workload entry of a continued report stands: the same workload, every mode measured."""
    if not isinstance(entry, dict) or not isinstance(entry.get("index"), int):
        return False
    i = entry["index"]
    return (0 <= i < len(contract.workloads) and entry.get("axes") == contract.axis_values(i)
            and all(isinstance(entry.get(m), dict) and "status" in entry[m] for m in modes))


def run_contracts(contracts: list, workloads, report: dict, out: str, measure_one: Callable, modes) -> bool:
    """Measures each contract's workloads (`workloads`: "all" or indices) that `report` lacks, appending them
    and writing the report after each (atomically), so a run cut short keeps what it measured and the next
    one measures only the rest. Returns whether any workload's reference or compiled output failed."""
    failed, kept, measured = False, 0, 0
    for c in contracts:
        task = next((t for t in report["tasks"] if isinstance(t, dict) and t.get("name") == c.name), None)
        if task is None:
            task = {"file": c.file, "name": c.name, "tolerance": {"atol": c.atol, "rtol": c.rtol}, "workloads": []}
            report["tasks"].append(task)
        # Entries of another workload (the contract changed) or cut short are measured again.
        task["workloads"] = [w for w in task.get("workloads", []) if _kept(w, c, modes)]
        have = {w["index"] for w in task["workloads"]}
        indices = range(len(c.workloads)) if workloads == "all" else workloads
        for i in indices:
            if i in have:
                kept += 1
                entry = next(w for w in task["workloads"] if w["index"] == i)
            else:
                entry = measure_one(c, i)
                task["workloads"].append(entry)
                task["workloads"].sort(key=lambda w: w["index"])
                write_report(report, out)
                measured += 1
                print(table_line(c.name, entry, modes), flush=True)
            failed |= any(entry.get(m, {}).get("status") in ("error", "mismatch", "nonfinite") for m in MODES)
    write_report(report, out)
    if kept:
        print(f"{TOOL}: {kept} workloads were in {out} already, {measured} measured now", flush=True)
    return failed


def table_line(task: str, entry: dict, modes) -> str:
    axes = ",".join(f"{k}={v}" for k, v in entry["axes"].items())
    cells = [f"{task:<22} w{entry['index']:<2} {axes:<36} {entry['bytes_moved'] / 1e6:>10.1f} MB"]
    for m in modes:
        r = entry.get(m, {})
        if r.get("status") == "ok":
            cells.append(f"{m} {r['median_ms']:9.4f} ms {r.get('gbps', 0):7.0f} GB/s n={r['n']:<4}")
        else:
            cells.append(f"{m} {r.get('status', '-'):>28}")
    e, c = entry.get("eager", {}), entry.get("compile", {})
    if e.get("status") == "ok" and c.get("status") == "ok":
        cells.append(f"compile/eager x{e['median_ms'] / c['median_ms']:.2f}")
    return "  ".join(cells)


# ---------------------------------------------------------------------------------------------- command line


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=TOOL, description=__doc__)
    p.add_argument("tasks", nargs="+", metavar="TASK.json")
    p.add_argument("--out", required=True,
                   help="the JSON file to write, after every workload; an existing one (measured on the same GPU with "
                        "the same settings) is continued: its workloads are kept and only the others measured")
    p.add_argument("--workloads", default="all", help="'all' or comma-separated indices, e.g. 0,1")
    p.add_argument("--modes", default="eager,compile", help="comma-separated: eager, compile")
    p.add_argument("--compile-mode", default="default", choices=COMPILE_MODES)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-reps", type=int, default=20)
    p.add_argument("--max-reps", type=int, default=2000)
    p.add_argument("--target-ci", type=float, default=0.01,
                   help="stop when the median's 95%% half-width is under this fraction of the median")
    p.add_argument("--max-seconds", type=float, default=30.0, help="timed repetitions per mode stop after this")
    p.add_argument("--device", default="cuda:0")
    args = p.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes) or len(set(modes)) != len(modes):
        p.error(f"--modes: expected a comma-separated subset of {', '.join(MODES)}, got '{args.modes}'")
    args.modes = tuple(m for m in MODES if m in modes)
    if args.workloads != "all":
        try:
            args.workloads = sorted({int(w) for w in args.workloads.split(",")})
        except ValueError:
            p.error(f"--workloads: expected 'all' or indices like 0,1, got '{args.workloads}'")
        if any(w < 0 for w in args.workloads):
            p.error("--workloads: indices must be non-negative")
    if args.min_reps < 1:
        p.error("--min-reps must be at least 1")
    if args.max_reps < args.min_reps:
        p.error("--max-reps must be at least --min-reps")
    if not args.target_ci > 0:
        p.error("--target-ci must be positive")
    if not args.max_seconds > 0:
        p.error("--max-seconds must be positive")
    if args.seed < 0:
        p.error("--seed must be non-negative")
    return args


def disable_tf32() -> str | None:
    """fp32 is the truth kevo's kernels are held to. Only the legacy flags are set: mixing them with the
    fp32_precision API makes torch (2.9+) raise when inductor reads them back. Returns why it failed, or None."""
    import torch
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32:
            return "the flags read back as True"
    except RuntimeError as e:
        return _first_line(e)
    return None


def _fail(message: str) -> int:
    print(f"{TOOL}: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        contracts = [load_contract(path) for path in args.tasks]
    except ContractError as e:
        return _fail(str(e))
    for c in contracts:
        if args.workloads != "all" and args.workloads[-1] >= len(c.workloads):
            return _fail(f"{c.file}: no workload {args.workloads[-1]} (it has {len(c.workloads)})")
    try:
        import torch
    except ImportError:
        return _fail("torch is not installed")
    if not torch.cuda.is_available():
        return _fail("no CUDA device")
    try:
        device = torch.device(args.device)
    except RuntimeError:
        return _fail(f"bad --device '{args.device}'")
    if device.type != "cuda":
        return _fail(f"--device must be a CUDA device, got '{args.device}'")
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    if device.index >= torch.cuda.device_count():
        return _fail(f"no CUDA device {device} ({torch.cuda.device_count()} visible)")
    torch.cuda.set_device(device)
    problem = disable_tf32()
    if problem:
        return _fail(f"could not turn TF32 off: {problem}")

    opts = RunOptions(modes=args.modes, compile_mode=args.compile_mode, seed=args.seed,
                      timing=TimingOptions(min_reps=args.min_reps, max_reps=args.max_reps,
                                           target_ci=args.target_ci, max_seconds=args.max_seconds))
    timer = CudaTimer(device)
    report = new_report(torch.cuda.get_device_name(device), torch.__version__, torch.version.cuda, opts,
                        timer.flush_bytes)
    try:
        report = continue_report(args.out, report)
    except ContractError as e:
        return _fail(str(e))
    failed = run_contracts(contracts, args.workloads, report, args.out,
                           lambda c, i: measure_workload(c, i, device, opts, timer), opts.modes)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
