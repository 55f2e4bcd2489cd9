"""The `prepbench` command of an installed package: the command line, run in this process by
the native module (the same code as the `prepbench` binary cargo builds)."""

import signal
import sys


def main():
    # The command line's own behaviour: Ctrl-C stops it, a closed pipe ends it quietly.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    from . import native

    sys.stdout.flush()
    sys.exit(native().main(["prepbench", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
