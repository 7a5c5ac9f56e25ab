#!/usr/bin/env python3
"""What a campaign file says about its search, as canonical text (for tests/search/replay_golden.sh).

Usage: campaign_digest.py CAMPAIGN.h5

Prints every table row by row, leaving out what differs between two runs of the same search
(the campaign id, the creation time, the commit and command line, wall and GPU-busy seconds) and
what follows from the template texts rather than from the search (source texts, prompts and their
token counts), and kevo's resume states: source hashes become their order of first appearance,
checkpoints their SHA-256, loopback ports (a test server's) "PORT".
Two files of the same search print the same text.
"""
import hashlib
import re
import sys

import h5py

SKIPPED_COLUMNS = {
    ("measurements", "wall_seconds"), ("generations", "wall_seconds"), ("generations", "gpu_busy_seconds"),
    ("llm_samples", "prompt"), ("llm_samples", "prompt_tokens"), ("llm_samples", "completion_tokens"),
}
KEPT_ATTRS = ("kevo_schema",)


def columns(group):
    """Column name -> list of row values; pooled fields as lists (text decoded)."""
    out = {}
    for name in group:
        if name.endswith("_offset") or name.endswith("_length") or name.endswith("_data"):
            continue
        ds = group[name]
        out[name] = [v.decode() if isinstance(v, bytes) else v.item() for v in ds[:]]
    for name in group:
        if not name.endswith("_data"):
            continue
        field = name[: -len("_data")]
        data = group[name][:]
        rows = zip(group[field + "_offset"][:], group[field + "_length"][:])
        if data.dtype.kind == "u":
            out[field] = [data[o:o + n].tobytes() for o, n in rows]
        else:
            out[field] = [data[o:o + n].tolist() for o, n in rows]
    return out


def main(path):
    hash_ids = {}

    def hash_id(h):
        return "src%d" % hash_ids.setdefault(h, len(hash_ids)) if h else ""

    with h5py.File(path, "r") as f:
        for a in KEPT_ATTRS:
            print("attr %s %s" % (a, f.attrs[a].decode()))
        for table in sorted(f):
            if table in ("sources", "resume"):  # texts; the search's state for kevo resume
                continue
            cols = columns(f[table])
            names = sorted(n for n in cols if (table, n) not in SKIPPED_COLUMNS)
            rows = len(next(iter(cols.values()))) if cols else 0
            print("table %s rows %d columns %s" % (table, rows, ",".join(names)))
            for r in range(rows):
                cells = []
                for n in names:
                    v = cols[n][r]
                    if n == "source_hash":
                        v = hash_id(v)
                    elif table == "checkpoints" and n == "bytes":
                        v = hashlib.sha256(v).hexdigest()[:16]
                    elif isinstance(v, bytes):
                        v = v.decode(errors="replace")
                    if isinstance(v, str):
                        v = re.sub(r"127\.0\.0\.1:[0-9]+", "127.0.0.1:PORT", v)
                    elif isinstance(v, float):
                        v = repr(v)
                    cells.append("%s=%s" % (n, v))
                print("  " + " ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1])
