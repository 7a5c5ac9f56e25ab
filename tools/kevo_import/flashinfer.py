"""FlashInfer-Bench definitions (and their workloads) as kevo contracts: the layout kevo's contract
format was shaped after, plus what FlashInfer-Bench leaves to its runner: how random inputs are
drawn, scalar inputs' values, the workloads' sizes and its default tolerance."""

from __future__ import annotations

import ast
import json
import os
import re

SUPPORTED = {"float32", "float16", "bfloat16", "int64", "int32", "bool"}
KEEP = ("name", "description", "op_type", "tags", "axes", "inputs", "outputs", "reference", "constraints")
# FlashInfer-Bench's runner draws random float inputs from a standard normal and integers from
# [-1024, 1024) (flashinfer_bench/bench/utils.py); its default tolerance is 1e-2.
FLOAT_INIT = {"dist": "normal", "mean": 0.0, "std": 1.0}
INT_INIT = {"dist": "randint", "low": -1024, "high": 1024}
DEFAULT_TOLERANCE = 1e-2


class ImportError_(Exception):
    """A definition or workload file the importer refuses; the message is the whole line."""


def read_workloads(path: str, name: str) -> list:
    """The workload objects of a FlashInfer trace JSONL file (one trace or workload per line) that
    belong to the definition `name`."""
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as e:
                raise ImportError_(f"{path}:{i}: not JSON: {e.msg}") from None
            if not isinstance(doc, dict):
                raise ImportError_(f"{path}:{i}: expected an object")
            if "workload" in doc:
                if doc.get("definition") not in (None, name):
                    continue
                doc = doc["workload"]
            if not isinstance(doc, dict) or not isinstance(doc.get("axes"), dict):
                raise ImportError_(f"{path}:{i}: a workload needs an 'axes' object")
            out.append(doc)
    return out


def default_workloads_path(definition_path: str) -> str | None:
    """FlashInfer trace layout: definitions/<op>/<name>.json beside workloads/<op>/<name>.jsonl."""
    norm = os.path.normpath(os.path.abspath(definition_path))
    parts = norm.split(os.sep)
    if "definitions" in parts:
        k = len(parts) - 1 - parts[::-1].index("definitions")
        parts[k] = "workloads"
        candidate = os.sep.join(parts)[: -len(".json")] + ".jsonl" if norm.endswith(".json") else None
        if candidate and os.path.isfile(candidate):
            return candidate
    sibling = norm[: -len(".json")] + ".jsonl" if norm.endswith(".json") else None
    if sibling and os.path.isfile(sibling):
        return sibling
    # SOL-ExecBench's layout: <problem>/definition.json beside <problem>/workload.jsonl.
    for name in ("workload.jsonl", "workloads.jsonl"):
        candidate = os.path.join(os.path.dirname(norm), name)
        if os.path.isfile(candidate):
            return candidate
    return None


def spread(workloads: list, limit: int) -> list:
    """At most `limit` workloads, smallest to largest, evenly spaced by their number of elements."""
    if len(workloads) <= limit:
        return workloads

    def size(w):
        n = 1
        for v in w["axes"].values():
            n *= max(int(v), 1)
        return n

    ranked = sorted(workloads, key=size)
    picks = sorted({round(i * (len(ranked) - 1) / (limit - 1)) for i in range(limit)})
    return [ranked[i] for i in picks]


def translate(definition: dict, workloads: list, max_workloads: int, tolerance: float, source: str) -> dict:
    for field in ("name", "axes", "inputs", "outputs", "reference"):
        if field not in definition:
            raise ImportError_(f"{source}: not a FlashInfer-Bench definition: no '{field}'")
    notes = [f"Imported from the FlashInfer-Bench definition {os.path.basename(source)} by `kevo import flashinfer`."]
    var_axes = [a for a, spec in definition["axes"].items() if spec.get("type") == "var"]
    unique, seen = [], set()
    for w in workloads:
        missing = [a for a in var_axes if a not in w["axes"]]
        if missing:
            raise ImportError_(f"{source}: workload {w.get('uuid', '?')} gives no size for {', '.join(missing)}")
        key = tuple(int(w["axes"][a]) for a in var_axes)
        if key not in seen:
            seen.add(key)
            unique.append(w)
    if not unique:
        raise ImportError_(f"{source}: no workloads (give the definition's JSONL with --workloads)")
    chosen = spread(unique, max_workloads)
    if len(chosen) < len(unique):
        notes.append(f"{len(chosen)} of the {len(unique)} distinct workloads kept, spread from the smallest to the "
                     "largest (--max-workloads)")
    inputs = {}
    for iname, spec in definition["inputs"].items():
        dtype = spec.get("dtype")
        if dtype not in SUPPORTED:
            raise ImportError_(f"{source}: input '{iname}' is {dtype}, which kevo does not support "
                               f"(it supports {', '.join(sorted(SUPPORTED))})")
        entry = {k: v for k, v in spec.items() if k in ("shape", "dtype", "description") and v is not None}
        if spec.get("shape", None) is None:
            entry["shape"] = []  # a scalar input (SOL-ExecBench: "shape": null): a 0-d tensor
        init = _input_init(iname, dtype, chosen, notes)
        if init:
            entry["init"] = init
        inputs[iname] = entry
    for oname, spec in definition["outputs"].items():
        if spec.get("dtype") not in SUPPORTED:
            raise ImportError_(f"{source}: output '{oname}' is {spec.get('dtype')}, which kevo does not support")
    doc = {k: definition[k] for k in KEEP if k in definition and definition[k] is not None}
    if "op_type" not in doc and isinstance(definition.get("type"), str):
        doc["op_type"] = definition["type"]  # the field's earlier name
    reference = tuple_returns(definition["reference"], list(definition["outputs"]), notes)
    reference = drop_input_generator(reference, definition.get("custom_inputs_entrypoint"), notes)
    reference = drop_asserts(plain_signature(drop_no_grad(reference, notes), notes), notes)
    doc["reference"] = reference
    doc["inputs"] = inputs
    doc["outputs"] = {o: _without_nulls(spec) for o, spec in definition["outputs"].items()}
    doc["axes"], expressions = _axes_without_expressions(definition["axes"], source)
    for group in ("inputs", "outputs"):
        for spec in doc[group].values():
            if isinstance(spec.get("shape"), list):
                spec["shape"] = [_substitute(d, expressions) for d in spec["shape"]]
    doc["workloads"] = [{a: int(w["axes"][a]) for a in var_axes} for w in chosen]
    doc["tolerance"] = {"atol": tolerance, "rtol": tolerance}
    doc["notes"] = notes
    return doc


def _without_nulls(spec: dict) -> dict:
    """A spec without its null fields (SOL-ExecBench writes `"description": null`)."""
    return {k: v for k, v in spec.items() if v is not None} if isinstance(spec, dict) else spec


def _axes_without_expressions(axes: dict, source: str) -> tuple:
    """The axes kevo declares, and the derived ones ({"type": "expr", "expression": "d // 2"}) as
    name -> expression: kevo's shapes take integer expressions over axes, so a derived axis is
    written out where a shape names it."""
    kept, expressions = {}, {}
    for name, spec in axes.items():
        if not isinstance(spec, dict):
            raise ImportError_(f"{source}: axis '{name}' is not an object")
        if spec.get("type") == "expr":
            if not isinstance(spec.get("expression"), str):
                raise ImportError_(f"{source}: axis '{name}' is an expression without an 'expression'")
            expressions[name] = spec["expression"]
        else:
            kept[name] = _without_nulls(spec)
    for _ in range(len(expressions)):  # a derived axis may be derived from another
        expressions = {n: _substitute(e, expressions) for n, e in expressions.items()}
    return kept, expressions


def _substitute(dim, expressions: dict):
    """A shape entry with each derived axis replaced by its expression (parenthesised inside a larger one)."""
    if not isinstance(dim, str) or not expressions:
        return dim
    if dim in expressions:
        return expressions[dim]
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: f"({expressions[m.group(0)]})" if m.group(0) in expressions
                  else m.group(0), dim)


def _run_function(tree):
    return next((fn for fn in tree.body if isinstance(fn, ast.FunctionDef) and fn.name == "run"), None)


def drop_no_grad(reference: str, notes: list) -> str:
    """run() decorated with @torch.no_grad() or @torch.inference_mode() (SOL-ExecBench's references
    are): kevo's references compute no gradients anyway, so the decorator lines go."""
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return reference
    fn = _run_function(tree)
    if fn is None or not fn.decorator_list:
        return reference
    lines = reference.splitlines(keepends=True)
    for d in fn.decorator_list:
        call = d.func if isinstance(d, ast.Call) else d
        name = ast.unparse(call)
        if name not in ("torch.no_grad", "torch.inference_mode", "no_grad", "inference_mode"):
            return reference  # kevo's parser names the decorator it refuses
        for i in range(d.lineno - 1, d.end_lineno):  # the decorator's line(s), blanked to keep line numbers
            lines[i] = "\n"
    notes.append("run()'s @torch.no_grad() dropped: kevo's references compute no gradients")
    return "".join(lines)


def plain_signature(reference: str, notes: list) -> str:
    """run()'s parameter and return annotations (`x: torch.Tensor`, `-> torch.Tensor`) dropped: the
    contract declares every input's shape and dtype. Line numbers stay."""
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return reference
    fn = _run_function(tree)
    a = fn.args if fn else None
    if fn is None or fn.body[0].lineno <= fn.lineno or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        return reference
    if fn.returns is None and not any(arg.annotation for arg in a.args):
        return reference
    defaults = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults)
    params = [arg.arg + ("" if d is None else "=" + ast.unparse(d)) for arg, d in zip(a.args, defaults)]
    lines = reference.splitlines(keepends=True)
    last = fn.body[0].lineno - 1  # the signature's last line (1-based): the body starts below it
    while last > fn.lineno and not lines[last - 1].strip():
        last -= 1
    lines[fn.lineno - 1] = f"def run({', '.join(params)}):\n"
    for i in range(fn.lineno, last):
        lines[i] = "\n"
    notes.append("run()'s annotations dropped: the contract declares the inputs' shapes and dtypes")
    return "".join(lines)


def drop_asserts(reference: str, notes: list) -> str:
    """run()'s assert statements (checks of its inputs' shapes and dtypes, which the contract
    declares and kevo checks) dropped, their lines kept blank."""
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return reference
    fn = _run_function(tree)
    if fn is None:
        return reference
    asserts = [n for n in ast.walk(fn) if isinstance(n, ast.Assert)]
    if not asserts:
        return reference
    lines = reference.splitlines(keepends=True)
    for n in asserts:
        indent = lines[n.lineno - 1][: len(lines[n.lineno - 1]) - len(lines[n.lineno - 1].lstrip())]
        lines[n.lineno - 1] = indent + "pass\n"  # a block may hold nothing else
        for i in range(n.lineno, n.end_lineno):
            lines[i] = "\n"
    notes.append(f"run()'s {len(asserts)} assert statement(s) dropped: the contract declares what they check")
    return "".join(lines)


def drop_input_generator(reference: str, entrypoint, notes: list) -> str:
    """The definition's own input generator (custom_inputs_entrypoint): kevo draws every input
    itself (FlashInfer-Bench's distributions), so the function goes from the reference."""
    if not isinstance(entrypoint, str):
        return reference
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return reference
    fn = next((f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == entrypoint), None)
    if fn is None:
        return reference
    lines = reference.splitlines(keepends=True)
    first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
    for i in range(first - 1, fn.end_lineno):
        lines[i] = "\n"
    notes.append(f"the definition's input generator {entrypoint}() dropped: kevo draws the inputs itself "
                 "(a standard normal for floats), not with its scaling")
    return "".join(lines)


def _input_init(name: str, dtype: str, workloads: list, notes: list) -> dict | None:
    kinds = {}
    for w in workloads:
        d = (w.get("inputs") or {}).get(name, {"type": "random"})
        kinds.setdefault(d.get("type", "random"), []).append(d)
    if "safetensors" in kinds:
        notes.append(f"{name}: {len(kinds['safetensors'])} workload(s) give it as safetensors data; kevo draws it "
                     "instead")
    if "scalar" in kinds:
        values = [d.get("value") for d in kinds["scalar"]]
        if len(set(map(repr, values))) > 1:
            notes.append(f"{name}: the workloads give different values ({', '.join(map(repr, values[:4]))}); kevo "
                         f"keeps the first, {values[0]!r}, for all")
        if len(kinds) > 1:
            notes.append(f"{name}: a scalar in some workloads, drawn in others; kevo keeps the scalar {values[0]!r}")
        value = values[0]
        if isinstance(value, bool):
            return {"dist": "constant", "value": int(value)}
        return {"dist": "constant", "value": value}
    if dtype == "bool":
        return None
    if dtype in ("int32", "int64"):
        notes.append(f"{name}: integers drawn as FlashInfer-Bench draws random ones, uniformly in [-1024, 1024)")
        return dict(INT_INIT)
    return dict(FLOAT_INIT)


def tuple_returns(reference: str, outputs: list, notes: list) -> str:
    """run() may return a dict keyed by output name (FlashInfer-Bench's runner maps it); kevo's
    reference returns outputs in order, so `return {"C": C}` becomes `return C`."""
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return reference  # kevo's parser reports it, at its line
    lines = reference.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    edits = []
    for fn in tree.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "run"):
            continue
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Dict)):
                continue
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.value.keys]
            if sorted(map(str, keys)) != sorted(outputs):
                continue
            by_key = dict(zip(keys, node.value.values))
            values = [ast.get_source_segment(reference, by_key[name]) for name in outputs]
            v = node.value
            start = offsets[v.lineno - 1] + _byte_to_char(lines[v.lineno - 1], v.col_offset)
            end = offsets[v.end_lineno - 1] + _byte_to_char(lines[v.end_lineno - 1], v.end_col_offset)
            edits.append((start, end, ", ".join(values)))
    for start, end, text in sorted(edits, reverse=True):
        reference = reference[:start] + text + reference[end:]
    if edits:
        notes.append("run() returns a dict keyed by output name; the reference returns the outputs in order instead")
    return reference


def _byte_to_char(line: str, col: int) -> int:
    return len(line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))
