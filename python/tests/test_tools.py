"""The PyTorch tools' progress line (tools/swlstm_torch.py's Progress, which dyneval_ref.py and
cudnn_lm.py share): its text and timing, and that --quiet leaves stderr empty even on a
terminal."""
import contextlib
import io
import os
import pty
import subprocess
import sys
import unittest
from unittest import mock

from common import DEVICE, ROOT, TMP, corpus, need_torch, swlstm_cli, tiny_checkpoint, torch

TOOLS = os.path.join(ROOT, "tools")


def run_tool(args, stderr_on_terminal):
    """Runs a tool with stdout to a pipe and stderr to a pseudo-terminal (or a pipe); returns
    (exit status, stdout, stderr)."""
    if not stderr_on_terminal:
        r = subprocess.run([sys.executable] + args, cwd=ROOT, capture_output=True)
        return r.returncode, r.stdout, r.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable] + args, cwd=ROOT, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the tool closed the terminal
            break
        if not chunk:
            break
        err += chunk
    out = p.stdout.read()
    os.close(master)
    return p.wait(), out, err


@need_torch
class ProgressLineTest(unittest.TestCase):
    def test_line_and_its_timing(self):
        sys.path.insert(0, TOOLS)
        import swlstm_torch
        clock = iter([100.0, 100.2, 101.0, 101.3, 102.0, 103.0])  # each init, each show
        with mock.patch.object(swlstm_torch.time, "monotonic", lambda: next(clock)):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                p = swlstm_torch.Progress("eval valid", 200, True)
                p.show(20)    # 0.2 s: too soon
                p.show(100)   # 1.0 s: drawn
                p.show(120)   # 0.3 s after: too soon
                p.show(150)   # 2.0 s: drawn
                p.done()
                swlstm_torch.Progress("eval", 10, False).done()
        self.assertEqual(err.getvalue(), "\reval valid:  50.0% | 0m01s | eta 0m01s  "
                                         "\reval valid:  75.0% | 0m02s | eta 0m01s  "
                                         "\r" + " " * 72 + "\r")


@need_torch
class QuietTest(unittest.TestCase):
    """--quiet: nothing on stderr, even on a terminal; off a terminal, nothing either way."""

    @classmethod
    def setUpClass(cls):
        cls.st = os.path.join(TMP, "tools.safetensors")
        swlstm_cli("export", tiny_checkpoint(), "--out", cls.st, "--quiet")

    def check_quiet(self, args, want):
        for terminal, quiet in ((True, ["--quiet"]), (False, [])):
            rc, out, err = run_tool(args + quiet, terminal)
            self.assertEqual(rc, 0, err)
            self.assertIn(want, out)
            self.assertEqual(err, b"", "stderr %s a terminal%s" % ("on" if terminal else "off", " with --quiet" if quiet else ""))

    def test_swlstm_torch(self):
        self.check_quiet([os.path.join(TOOLS, "swlstm_torch.py"), self.st, "--split", "valid", "--max-bytes", "600"],
                         b"valid bpc ")

    def test_dyneval_ref(self):
        self.check_quiet([os.path.join(TOOLS, "dyneval_ref.py"), self.st, "--split", "test", "--max-bytes", "300",
                          "--dyn-stats", "2000"], b"dynamic, ")

    def test_cudnn_lm(self):
        if DEVICE != "cuda" or not torch.cuda.is_available():
            self.skipTest("cudnn_lm.py runs on a CUDA device (make test-gpu)")
        self.check_quiet([os.path.join(TOOLS, "cudnn_lm.py"), corpus(), "--hidden", "64", "--batch", "4", "--seq", "16",
                          "--max-steps", "20", "--warmup", "2", "--split", "0.8,0.1,0.1"], b"valid bpc ")


if __name__ == "__main__":
    unittest.main()


class MissingPackageLine(unittest.TestCase):
    """tools/need.py's missing(): one line naming the interpreter that ran the tool and, when
    another python3 here can import the package, that one."""

    def line(self, other_has_it):
        fake = os.path.join(TMP, "bin-%d" % other_has_it, "python3")  # a python3 on PATH: yes or no to any import
        os.makedirs(os.path.dirname(fake), exist_ok=True)
        with open(fake, "w") as f:
            f.write("#!/bin/sh\nexit %d\n" % (0 if other_has_it else 1))
        os.chmod(fake, 0o755)
        code = ("import sys; sys.path.insert(0, %r); sys.argv = ['tools/plot_log.py', 'RUN']; import need; "
                "need.missing('plot_log', 'no_such_module', 'python3-nsm', 'nsm')" % TOOLS)
        env = dict(os.environ, PATH=os.path.dirname(fake) + os.pathsep + "/nonexistent")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        return r.stderr.strip(), fake

    def test_names_this_interpreter_and_the_one_that_has_it(self):
        err, fake = self.line(True)
        self.assertEqual(err, "plot_log: error: no_such_module is missing for %s; %s has it: %s tools/plot_log.py RUN"
                         % (sys.executable, fake, fake))

    def test_names_this_interpreter_and_the_packages(self):
        err, _ = self.line(False)
        self.assertEqual(err, "plot_log: error: no_such_module is missing for %s: apt-get install python3-nsm "
                         "(for /usr/bin/python3), or %s -m pip install nsm" % (sys.executable, sys.executable))

    def test_the_package_names_this_interpreter(self):
        code = "import sys; sys.modules['numpy'] = None; sys.path.insert(0, %r); import swlstm" % os.path.join(ROOT, "python")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(r.stderr.strip().splitlines()[-1], "ImportError: swlstm: numpy is missing for %s: apt-get install "
                         "python3-numpy (for /usr/bin/python3), or %s -m pip install numpy" % (sys.executable, sys.executable))
