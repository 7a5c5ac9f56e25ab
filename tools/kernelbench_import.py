"""Translates a KernelBench problem file (Model, get_inputs, get_init_inputs) into a kevo contract.

    python3 tools/kernelbench_import.py PROBLEM.py [-o TASK.json] [--name NAME] [--seed S] [--no-agree]

Exit status: 0 written; 1 the translation disagrees with the problem's Model (nothing written) or
an internal error; 2 the problem cannot be translated (one line: PROBLEM.py:LINE: why)."""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kevo_import.contract_json import write_contract  # noqa: E402
from kevo_import.kb_translate import TranslateError, summary, translate  # noqa: E402


def main(argv: list) -> int:
    ap = argparse.ArgumentParser(prog="kernelbench_import", description=__doc__.split("\n")[0])
    ap.add_argument("problem")
    ap.add_argument("-o", "--out", help="contract to write (default: NAME.json in the current folder)")
    ap.add_argument("--name", help="the contract's name (default: the file's stem)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the agreement check's draws")
    ap.add_argument("--no-agree", action="store_true", help="skip the agreement check under Python torch")
    a = ap.parse_args(argv)
    try:
        with open(a.problem, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        print(f"{a.problem}: cannot read: {e.strerror}", file=sys.stderr)
        return 2
    try:
        t = translate(a.problem, source, a.name)
    except TranslateError as e:
        where = f"{a.problem}:{e.line}" if e.line else a.problem
        return capture_fallback(a, source, f"{where}: cannot translate: {e}")
    out = a.out or f"{t.contract['name']}.json"
    print(f"{a.problem}: {t.contract['name']}")
    print(summary(t))
    agreed = agreement(t, a)
    if agreed is False:
        return 1
    if not write_contract(t.contract, out):
        return 2
    print(f"wrote {out}")
    return 0


def capture_fallback(a, source: str, refusal: str) -> int:
    """The AST translation refused the problem: trace the model under Python torch instead (the
    capture path, tools/kevo_import/kb_capture.py). Without torch, the AST refusal stands."""
    try:
        import torch
    except ImportError:
        print(refusal, file=sys.stderr)
        return 2
    from kevo_import.kb_capture import CaptureError, agree, capture
    from kevo_import.kb_translate import default_name

    print(f"  {refusal.split(': cannot translate: ', 1)[-1]}: the AST translation refuses it; capturing the model "
          "under Python torch instead")
    name = a.name or default_name(a.problem)
    try:
        cap = capture(a.problem, source, name, a.seed)
    except CaptureError as e:
        print(f"{refusal} (capture: {e})", file=sys.stderr)
        return 2
    except Exception as e:  # the problem's own code failing is reported, not a crash
        print(f"{refusal} (capture: the problem raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})",
              file=sys.stderr)
        return 2
    c = cap.contract
    print(f"{a.problem}: {c['name']} (captured: {sum(1 for l in c['reference'].splitlines() if ' = ' in l)} statements)")
    print(f"  axes: var: {', '.join(cap.var) or 'none'}; small workload: {cap.small}")
    if a.no_agree:
        print("  agreement check: skipped (--no-agree)")
    else:
        print(f"  python: {sys.executable}, torch {torch.__version__}")
        try:
            ok, lines = agree(cap, a.problem, source, a.seed)
        except Exception as e:
            print(f"{a.problem}: agreement check failed: the problem raised {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        for line in lines:
            print(f"  {line}" if ok else f"{a.problem}: agreement check failed: {line}", file=sys.stdout if ok
                  else sys.stderr)
        if not ok:
            return 1
    out = a.out or f"{c['name']}.json"
    if not write_contract(c, out):
        return 2
    print(f"wrote {out}")
    return 0


def agreement(t, a) -> bool | None:
    if a.no_agree:
        print("  agreement check: skipped (--no-agree)")
        return None
    try:
        import torch
    except ImportError:
        print(f"  agreement check: skipped (no torch in {sys.executable})")
        return None
    from kevo_import.kb_agree import check

    print(f"  python: {sys.executable}, torch {torch.__version__}")

    try:
        r = check(t, a.seed)
    except Exception as e:  # the problem's own code failing at the small sizes is the importer's fault
        print(f"{a.problem}: agreement check failed: the problem raised {type(e).__name__}: {e}", file=sys.stderr)
        return False
    for line in r.lines:
        print(f"  {line}" if r.ok else f"{a.problem}: agreement check failed: {line}", file=sys.stdout if r.ok
              else sys.stderr)
    return r.ok


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
