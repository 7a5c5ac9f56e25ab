"""Translates a FlashInfer-Bench definition (JSON) and its workloads (JSONL) into a kevo contract.

    python3 tools/flashinfer_import.py DEFINITION.json [-o TASK.json] [--workloads W.jsonl]
        [--max-workloads 8] [--tolerance 1e-2] [--name NAME]

Exit status: 0 written; 2 a file the importer cannot use (one line saying why)."""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kevo_import.contract_json import write_contract  # noqa: E402
from kevo_import.flashinfer import (DEFAULT_TOLERANCE, ImportError_, default_workloads_path,  # noqa: E402
                                    read_workloads, translate)


def main(argv: list) -> int:
    ap = argparse.ArgumentParser(prog="flashinfer_import", description=__doc__.split("\n")[0])
    ap.add_argument("definition")
    ap.add_argument("-o", "--out", help="contract to write (default: NAME.json in the current folder)")
    ap.add_argument("--workloads", help="the definition's workloads, a FlashInfer trace JSONL file "
                                        "(default: workloads/.../NAME.jsonl beside definitions/, or DEFINITION.jsonl)")
    ap.add_argument("--max-workloads", type=int, default=8, help="keep at most this many, spread by size")
    ap.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                    help="atol and rtol (FlashInfer-Bench's default: 1e-2)")
    ap.add_argument("--name", help="the contract's name (default: the definition's)")
    a = ap.parse_args(argv)
    if a.max_workloads < 1:
        print("flashinfer_import: --max-workloads must be at least 1", file=sys.stderr)
        return 2
    try:
        with open(a.definition, encoding="utf-8") as f:
            definition = json.load(f)
        if not isinstance(definition, dict):
            raise ImportError_(f"{a.definition}: expected a JSON object")
        wpath = a.workloads or default_workloads_path(a.definition)
        if not wpath:
            raise ImportError_(f"{a.definition}: no workloads file found beside it; give one with --workloads")
        workloads = read_workloads(wpath, definition.get("name"))
        contract = translate(definition, workloads, a.max_workloads, a.tolerance, a.definition)
    except json.JSONDecodeError as e:
        print(f"{a.definition}:{e.lineno}:{e.colno}: not JSON: {e.msg}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{e.filename}: cannot read: {e.strerror}", file=sys.stderr)
        return 2
    except ImportError_ as e:
        print(str(e), file=sys.stderr)
        return 2
    if a.name:
        contract["name"] = a.name
    out = a.out or f"{contract['name']}.json"
    if not write_contract(contract, out):
        return 2
    print(f"{a.definition}: {contract['name']}: {len(contract['inputs'])} inputs, {len(contract['workloads'])} "
          f"workloads from {wpath}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
