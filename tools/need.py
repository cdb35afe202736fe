"""need.py: what the Python tools share about this machine. missing() is the one line a tool
prints when a package is missing: the interpreter that ran it and, when another python3 here
has the package, that one (the README's apt-get packages install for /usr/bin/python3, not for
a python3 of pyenv, conda or a venv that comes first on PATH). cores() is how many CPU cores
this process may use: Debian's PyTorch starts with one thread."""
import os
import shutil
import subprocess
import sys


def _has(python, module):
    try:
        return subprocess.run([python, "-c", "import " + module], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def missing(tool, module, apt, pip):
    """Exits with one line: `module` cannot be imported by this interpreter."""
    me = os.path.realpath(sys.executable)
    others = dict.fromkeys(p for p in ("/usr/bin/python3", shutil.which("python3"))
                           if p and os.path.exists(p) and os.path.realpath(p) != me)
    has = next((p for p in others if _has(p, module)), None)
    what = f"{tool}: error: {module} is missing for {sys.executable}"
    if has:
        sys.exit(f"{what}; {has} has it: {has} {' '.join(sys.argv)}")
    sys.exit(f"{what}: apt-get install {apt} (for /usr/bin/python3), or {sys.executable} -m pip install {pip}")


def cores():
    return len(os.sched_getaffinity(0))
