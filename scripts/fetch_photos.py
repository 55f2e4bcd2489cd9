#!/usr/bin/env python3
"""Real photographs for tests and benchmarks, never committed: the JPEG wallpapers of Debian's
`lomiri-wallpapers-16.04` package (15 photographs, 1.5-15.9 MP, 3 baseline and 12 progressive,
CC-BY and CC-BY-SA as the package's copyright file lists), fetched with `apt-get download` and
unpacked with `dpkg-deb` into a cache folder.

    python3 scripts/fetch_photos.py [--out target/tmp/photos]

Prints the folder holding the .jpg files. Exits 2, saying why, where apt-get or dpkg-deb is
missing or the package cannot be fetched (no Debian archive reachable): callers skip then.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

PACKAGE = "lomiri-wallpapers-16.04"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "target", "tmp", "photos"))
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    if len(glob.glob(os.path.join(out, "*.jpg"))) >= 10:
        print(out)
        return
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            print(f"fetch_photos: `{tool}` not found (a Debian-based system is needed to fetch "
                  f"{PACKAGE})", file=sys.stderr)
            sys.exit(2)
    with tempfile.TemporaryDirectory() as work:
        fetched = subprocess.run(["apt-get", "download", PACKAGE], cwd=work,
                                 capture_output=True, text=True)
        if fetched.returncode != 0:
            print(f"fetch_photos: `apt-get download {PACKAGE}` failed (run `apt-get update` "
                  f"first?): {fetched.stderr.strip()}", file=sys.stderr)
            sys.exit(2)
        debs = glob.glob(os.path.join(work, "*.deb"))
        tree = os.path.join(work, "tree")
        subprocess.run(["dpkg-deb", "-x", debs[0], tree], check=True)
        photos = sorted(glob.glob(os.path.join(tree, "**", "*.jpg"), recursive=True))
        if not photos:
            print(f"fetch_photos: {PACKAGE} holds no .jpg files", file=sys.stderr)
            sys.exit(2)
        os.makedirs(out, exist_ok=True)
        for photo in photos:
            shutil.copy(photo, os.path.join(out, os.path.basename(photo)))
    print(out)


if __name__ == "__main__":
    main()
