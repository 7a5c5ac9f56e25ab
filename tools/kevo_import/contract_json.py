"""Writes contracts as people read them: one line per input, output, axis and workload."""

from __future__ import annotations

import json
import sys


def dumps(doc: dict) -> str:
    lines = ["{"]
    items = list(doc.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i + 1 < len(items) else ""
        if isinstance(value, dict) and value and key in ("axes", "inputs", "outputs"):
            lines.append(f"  {json.dumps(key)}: {{")
            entries = list(value.items())
            for j, (k, v) in enumerate(entries):
                lines.append(f"    {json.dumps(k)}: {json.dumps(v)}{',' if j + 1 < len(entries) else ''}")
            lines.append("  }" + comma)
        elif isinstance(value, list) and value and key in ("workloads", "notes"):
            lines.append(f"  {json.dumps(key)}: [")
            for j, v in enumerate(value):
                lines.append(f"    {json.dumps(v)}{',' if j + 1 < len(value) else ''}")
            lines.append("  ]" + comma)
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_contract(doc: dict, out: str) -> bool:
    """Writes the contract to `out`; False, with one line on stderr, where it cannot."""
    try:
        with open(out, "w", encoding="utf-8") as f:
            f.write(dumps(doc))
    except OSError as e:
        print(f"{out}: cannot write: {e.strerror}", file=sys.stderr)
        return False
    return True
