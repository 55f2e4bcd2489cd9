"""Runs a fixture script inside its own virtual environment under scripts/, creating it and
installing the script's packages first (the project's tests never need them)."""
import os
import subprocess
import sys

SCRIPTS = os.path.dirname(os.path.abspath(__file__))


def enter(name, packages, script):
    """Re-executes `script` (with its arguments) with the Python of scripts/<name>, unless
    already running there."""
    venv = os.path.join(SCRIPTS, name)
    python = os.path.join(venv, "bin", "python")
    if sys.prefix == venv:
        return
    if not os.path.exists(python):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    subprocess.check_call([os.path.join(venv, "bin", "pip"), "install", "-q", *packages])
    os.execv(python, [python, os.path.abspath(script), *sys.argv[1:]])
