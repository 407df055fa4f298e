"""PASS/FAIL counting shared by the tests/parallel oracles: check() counts, prints the first 30 failures, and
finish() prints the summary line and exits with the status."""
import sys

failures = 0
checks = 0


def check(cond, msg):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        if failures <= 30:
            print("FAIL:", msg)


def finish():
    print("%d checks, %d failed" % (checks, failures))
    sys.exit(1 if failures else 0)
