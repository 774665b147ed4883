#!/usr/bin/env python3
"""Checks what an H.264 stream shows: decodes it with ffmpeg (the independent decoder) and
compares pixels of its last (or first) picture with the colours expected there.

    check-picture.py STREAM.h264 WIDTH HEIGHT [--first] [--count R,G,B=N ...] X,Y=R,G,B ...

X and Y are fractions of the width and height (0.5,0.5 is the middle). Each colour must match
within --tolerance per channel (default 24: limited-range BT.601 and the encoder's rounding on
flat areas leave far less). --count asks for at least N pixels of a colour anywhere in the
picture (within the same tolerance). Exit status 0 when every check holds, 1 otherwise.
"""
import argparse
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stream")
    parser.add_argument("width", type=int)
    parser.add_argument("height", type=int)
    parser.add_argument("checks", nargs="*", metavar="X,Y=R,G,B")
    parser.add_argument("--count", action="append", default=[], metavar="R,G,B=N",
                        help="at least N pixels of this colour anywhere")
    parser.add_argument("--first", action="store_true", help="check the first picture instead of the last")
    parser.add_argument("--tolerance", type=int, default=24)
    args = parser.parse_args()

    decoded = subprocess.run(["ffmpeg", "-v", "error", "-i", args.stream, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                             capture_output=True, check=False)
    if decoded.returncode != 0 or decoded.stderr:
        sys.exit(f"check-picture: {args.stream} does not decode cleanly: {decoded.stderr.decode(errors='replace')}")
    size = args.width * args.height * 3
    count = len(decoded.stdout) // size
    if count == 0:
        sys.exit(f"check-picture: {args.stream} holds no {args.width}x{args.height} picture")
    index = 0 if args.first else count - 1
    picture = decoded.stdout[index * size:(index + 1) * size]

    failures = 0
    for check in args.checks:
        place, colour = check.split("=")
        fx, fy = (float(v) for v in place.split(","))
        expected = [int(v) for v in colour.split(",")]
        x, y = min(int(fx * args.width), args.width - 1), min(int(fy * args.height), args.height - 1)
        offset = (y * args.width + x) * 3
        got = list(picture[offset:offset + 3])
        ok = all(abs(a - b) <= args.tolerance for a, b in zip(got, expected))
        failures += not ok
        print(f"check-picture: picture {index + 1} of {count} at ({x}, {y}): {got}, expected {expected}: "
              + ("ok" if ok else "WRONG"))
    for check in args.count:
        colour, least = check.split("=")
        expected = [int(v) for v in colour.split(",")]
        found = sum(1 for offset in range(0, size, 3)
                    if all(abs(picture[offset + c] - expected[c]) <= args.tolerance for c in range(3)))
        ok = found >= int(least)
        failures += not ok
        print(f"check-picture: picture {index + 1} of {count} has {found} pixels of {expected}, at least {least} expected: "
              + ("ok" if ok else "WRONG"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
