"""The benchmarks' Python environment: target/bench-venv, with the peers each script compares with."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "target", "bench-venv")


def reexec_inside(script, packages):
    """Re-runs `script` under target/bench-venv (created on first use) with `packages` installed;
    returns only when already running there (the script passes --inner)."""
    if "--inner" in sys.argv:
        return
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
    subprocess.check_call([python, "-m", "pip", "install", "-q", *packages])
    os.execv(python, [python, script, "--inner"] + sys.argv[1:])
