"""Attributes heaptrack's allocation stacks of a `carwindow drive` run to the frame path.

Input: a heaptrack flame-graph stack file (`frame;frame;... count`, root first), the pictures
drawn and the access units sent. Output: allocations per drawn picture (draw, NV12) and per
sent access unit (encode, send), split into our code and the GL driver below our GL calls
(frames without symbols, or in libGL/libEGL/libgallium)."""
import collections
import re
import sys

# Mangled names of our modules: $s9CarWindow, $s12CarWindowMap, $s19CarWindowProjection, ...
OURS = re.compile(r"^\$s\d+CarWindow")

STAGES = [  # (name, marker in a frame, per); the first stage whose marker a stack holds wins
    ("NV12", "convertToNV12", "drawn"),
    ("NV12 readback", "collectNV12", "drawn"),
    ("draw", "MapRenderer", "drawn"),
    ("encode", "EncoderStage", "sent"),
    ("session loop", "ProjectionSession", "sent"),
]


def main() -> None:
    path, drawn, sent = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    per = {"drawn": max(drawn, 1), "sent": max(sent, 1)}
    ours = {name: collections.Counter() for name, _, _ in STAGES}
    driver = collections.Counter()
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not count_text.isdigit():
            continue
        count, frames = int(count_text), stack.split(";")
        for name, marker, _ in STAGES:
            if any(marker in frame for frame in frames):
                break
        else:
            continue
        deepest = max(i for i, frame in enumerate(frames) if "CarWindow" in frame or marker in frame)
        below = frames[deepest + 1:]
        if any(f.strip().startswith("0x") or "libGL" in f or "libEGL" in f or "gallium" in f for f in below):
            driver[name] += count
        else:
            # A standard-library frame specialised for one of our types: name our caller too.
            site = frames[deepest][:90]
            if frames[deepest].startswith("$ss"):
                callers = [f for f in frames[:deepest] if OURS.match(f)]
                if callers:
                    site = callers[-1][:70] + " > " + site[:40]
            ours[name][site] += count
    print(f"{drawn} pictures drawn, {sent} access units sent")
    print(f"{'stage':14} {'per':6} {'ours':>8} {'GL driver':>10}")
    for name, _, unit in STAGES:
        print(f"{name:14} {unit:6} {sum(ours[name].values()) / per[unit]:8.1f} {driver[name] / per[unit]:10.1f}")
    print("our allocation sites, per unit of their stage:")
    rows = [(count / per[unit], name, site) for name, _, unit in STAGES for site, count in ours[name].items()]
    for value, name, site in sorted(rows, reverse=True)[:15]:
        print(f"  {value:7.2f}  {name:13} {site}")


if __name__ == "__main__":
    main()
