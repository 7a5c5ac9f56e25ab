#!/usr/bin/env python3
"""Reads campaign files with h5py exactly as docs/campaign-file.md tells users to.

    read_campaign_h5py.py DOC SAMPLE APPENDED EMPTY

DOC is docs/campaign-file.md: every dataset and root attribute it lists (table rows that start
with a backquoted name) must exist in the files with the documented dtype, and the files must
hold nothing it does not list. SAMPLE is the campaign of tests/store/sample_campaign.h written
whole, whose values are checked; APPENDED the same campaign appended a generation at a time (it
reads the same, and keeps its last two resume states); EMPTY has no rows. Exits 77 (ctest SKIP)
when h5py is missing.
"""
import hashlib
import json
import math
import re
import sys

SKIP = 77

try:
    import h5py
    import numpy as np
except ImportError as e:
    print(f"SKIPPED: h5py is not importable ({e}); install python3-h5py (scripts/setup.sh does)")
    sys.exit(SKIP)

TYPES = {"int32": np.int32, "int64": np.int64, "uint64": np.uint64, "float64": np.float64, "uint8": np.uint8}
ROW = re.compile(r"^\|\s*`([/a-z_0-9]+)`\s*\|\s*`(int32|int64|uint64|float64|uint8|string)`")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def documented(doc_path):
    datasets, attributes = {}, {}
    with open(doc_path, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line)
            if m:
                name, dtype = m.groups()
                (datasets if name.startswith("/") else attributes)[name] = dtype
    return datasets, attributes


def text(ds):
    """A string column as Python str, the documented way."""
    return list(ds.asstr()[:])


def pooled(group, name):
    """Row i of a pooled field, the documented way."""
    data = group[name + "_data"][:]
    return [data[o:o + n] for o, n in zip(group[name + "_offset"][:], group[name + "_length"][:])]


def check_layout(f, label, datasets, attributes):
    for name, dtype in attributes.items():
        check(name in f.attrs, f"{label}: root attribute {name} is missing")
        if name in f.attrs:
            check(isinstance(f.attrs[name], (bytes, np.bytes_)), f"{label}: attribute {name} is not a string")
    check(set(f.attrs) == set(attributes), f"{label}: root attributes {sorted(f.attrs)} != documented")
    check(f.attrs.get("kevo_schema") == b"kevo-campaign/2", f"{label}: kevo_schema is {f.attrs.get('kevo_schema')}")

    found = set()
    f.visititems(lambda name, obj: found.add("/" + name) if isinstance(obj, h5py.Dataset) else None)
    check(found == set(datasets), f"{label}: undocumented {sorted(found - set(datasets))}, "
                                  f"missing {sorted(set(datasets) - found)}")
    tables = {}
    for name, dtype in datasets.items():
        if name not in f:
            continue
        ds = f[name]
        check(ds.ndim == 1, f"{label}: {name} is not 1-D")
        if dtype == "string":
            info = h5py.check_string_dtype(ds.dtype)
            check(info is not None and info.encoding == "utf-8" and info.length is not None,
                  f"{label}: {name} is {ds.dtype}, not fixed-length UTF-8")
        else:
            check(ds.dtype == np.dtype(TYPES[dtype]).newbyteorder("<"), f"{label}: {name} is {ds.dtype}, not {dtype}")
        check("kevo_checksum" in ds.attrs, f"{label}: {name} has no kevo_checksum")
        table = name.split("/")[1]
        if table == "resume":
            check("generation" in ds.attrs, f"{label}: {name} has no generation")
            continue
        if not name.endswith("_data"):
            tables.setdefault(table, {})[name] = ds.shape[0]
    for table, lengths in tables.items():
        check(len(set(lengths.values())) == 1, f"{label}: /{table} columns differ in length: {lengths}")
    for name in datasets:
        if name.endswith("_data") and name in f:
            group, field = f[name.rsplit("/", 1)[0]], name.rsplit("/", 1)[1][:-5]
            off, n, size = group[field + "_offset"][:], group[field + "_length"][:], f[name].shape[0]
            check(bool(np.all(off >= 0) and np.all(n >= 0) and np.all(off + n <= size)),
                  f"{label}: {name}: rows outside the pool")
    return tables


def check_sample(f):
    ids = f["variants/id"][:]
    n = len(ids)
    check(n == 40, f"sample: {n} variants, expected 40")
    check(list(ids) == [3 * i + 1 for i in range(n)], "sample: /variants/id")
    check(f.attrs["command"].decode("utf-8") ==
          "kevo search --task \"soft max\" --arm 'learned'\n\t--note µs ✓ 🚀 \\n", "sample: command attribute")
    check(f.attrs["kevo_commit"] == b"", "sample: empty kevo_commit")
    check(text(f["tasks/name"]) == ["softmax", "layer norm ✓"], f"sample: /tasks/name {text(f['tasks/name'])}")
    for contract, sha in zip(text(f["tasks/contract"]), text(f["tasks/sha256"])):
        check(hashlib.sha256(contract.encode()).hexdigest() == sha, "sample: /tasks/sha256 is not of its contract")
    check(int(f["runs/seed"][1]) == 2**64 - 1, "sample: /runs/seed keeps 2^64-1")
    check(text(f["runs/arm"]) == ["random", "learned", "sweep"], "sample: /runs/arm")

    genome = pooled(f["variants"], "genome")
    check(list(genome[1]) == [1, -1, -2**63, 2**63 - 1], f"sample: genome of row 1 is {genome[1]}")
    check(len(genome[3]) == 0, "sample: genome of row 3 is empty")
    parents = pooled(f["variants"], "parents")
    check(len(parents[0]) == 0 and list(parents[4]) == [10, 7], f"sample: parents {parents[0]}, {parents[4]}")
    space = text(f["variants/space"])
    check(space[0] == "reduce/rows — 0" and space[3] == "", f"sample: /variants/space {space[:4]}")
    lp = f["variants/log_prob"][:]
    check(math.isnan(lp[0]) and lp[1] == -math.inf and lp[2] == 0 and math.copysign(1, lp[2]) < 0,
          f"sample: /variants/log_prob {lp[:3]}")
    check(list(f["variants/duplicate_of"][:5]) == [-1, -1, -1, -1, 10], "sample: /variants/duplicate_of")

    errors = [e.tobytes().decode("utf-8") for e in pooled(f["measurements"], "error")]
    check(errors[1] == "ptxas said \0 and stopped", f"sample: error of measurement 1 is {errors[1]!r}")
    check(errors[0] == "", "sample: an ok measurement has no error")
    variant = f["measurements/variant"][:]
    m = f["workloads/measurement"][:]
    check(bool(np.all(f["workloads/variant"][:] == variant[m])), "sample: /workloads/variant != its measurement's")

    hashes = text(f["sources/hash"])
    texts = [t.tobytes().decode("utf-8") for t in pooled(f["sources"], "text")]
    check(len(texts) == 21 and texts[-1] == "", f"sample: {len(texts)} sources")
    for h, t in zip(hashes, texts):
        check(hashlib.sha256(t.encode()).hexdigest() == h, f"sample: source {h[:12]} does not hash to its key")
    check(texts[0].startswith("// kevo candidate 0 — \"quoted\" 'single' \\\n") and "\r\n" in texts[0],
          "sample: source text")
    check(f["sources"].attrs["omitted"] == 0, "sample: /sources marked omitted")

    blobs = [b.tobytes() for b in pooled(f["checkpoints"], "bytes")]
    check(blobs == [bytes(range(256)), b"", bytes(100000)], "sample: /checkpoints/bytes")
    check(text(f["checkpoints/kind"]) == ["policy", "policy", ""], "sample: /checkpoints/kind")

    prompts = [t.tobytes().decode("utf-8") for t in pooled(f["llm_samples"], "prompt")]
    responses = [t.tobytes().decode("utf-8") for t in pooled(f["llm_samples"], "response")]
    check(json.loads(prompts[0])[1]["content"] == "caf\u00e9 \n", "sample: /llm_samples/prompt is not the chat JSON")
    check(responses[1] == "no code" and responses[2] == "", "sample: /llm_samples/response")
    check(text(f["llm_samples/status"]) == ["ok", "bad_reply", "request_failed"], "sample: /llm_samples/status")
    check(list(f["llm_samples/reward"][:]) == [2.0, -1.0, 0.0], "sample: /llm_samples/reward")
    check(list(f["llm_samples/variant"][:])[1:] == [-1, -1], "sample: /llm_samples/variant")
    check(text(f["spaces/space"]) == ["reduce/rows \u2014 0", "gemm/linear"], "sample: /spaces/space")
    check(text(f["spaces/knobs"])[0].split(",") == ["kThreads", "kVec", "kCache"], "sample: /spaces/knobs")


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    doc, sample, appended, empty = sys.argv[1:]
    datasets, attributes = documented(doc)
    check(len(datasets) > 60 and len(attributes) == 8,
          f"{doc}: found {len(datasets)} datasets and {len(attributes)} attributes in its tables")
    with h5py.File(sample, "r") as f:
        check_layout(f, "sample", datasets, attributes)
        check_sample(f)
    with h5py.File(appended, "r") as f:
        check_layout(f, "appended", datasets, attributes)
        check_sample(f)
        slots = sorted((int(f["resume"][s].attrs["generation"]), f["resume"][s][:].tobytes()) for s in f["resume"])
        check(slots == [(3, b"state after generation 3"), (4, b"state after generation 4")],
              f"appended: resume states {slots}")
    with h5py.File(empty, "r") as f:
        tables = check_layout(f, "empty", datasets, attributes)
        check(all(n == 0 for cols in tables.values() for n in cols.values()), "empty: a table has rows")
        check(len(tables) == 11, f"empty: {len(tables)} tables")
    for what in failures:
        print("FAIL", what)
    print(f"{len(datasets)} datasets, {len(attributes)} root attributes checked: "
          f"{'ok' if not failures else str(len(failures)) + ' failures'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
