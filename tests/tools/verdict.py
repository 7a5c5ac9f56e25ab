"""How the Python tests of tools/ end: each failure on its own line, a count line, the exit status."""


def finish(failures):
    for f in failures:
        print("FAIL: " + f)
    print("%d passed, %d failed" % (1 if not failures else 0, 1 if failures else 0))
    return 1 if failures else 0
