#!/usr/bin/env python3
"""Runs the binding's tests (python/tests/test_*.py) and prints one "N passed, N failed" line
(and how many were skipped); exits non-zero on any failure or error.

    python3 python/tests/run.py           CPU tensors (CI)
    python3 python/tests/run.py --cuda    the product tests on CUDA tensors, fp32 and bf16,
                                          and a training step of the example (make test-gpu)
    python3 python/tests/run.py -k NAME   only tests whose name contains NAME
"""
import argparse
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))


def tests_of(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from tests_of(t)
        else:
            yield t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuda", action="store_true", help="products on CUDA tensors")
    ap.add_argument("-k", dest="name", default="")
    args = ap.parse_args()
    os.environ["SWLSTM_TEST_DEVICE"] = "cuda" if args.cuda else "cpu"
    loaded = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    suite = unittest.TestSuite(t for t in tests_of(loaded) if args.name in t.id())
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    if skipped:
        print("%d skipped (listed above)" % skipped)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed or result.testsRun == 0 else 0)


if __name__ == "__main__":
    main()
