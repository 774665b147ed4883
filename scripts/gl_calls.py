#!/usr/bin/env python3
"""Counts the GL calls of each frame in an `apitrace dump --call-nos=no --arg-names=no` listing.

`carwindow render` ends every frame with glFinish (MapRenderer.finish()), so the calls between
two glFinish calls are one frame. The first frame loads tiles and makes GPU buffers; later frames
of an unchanged camera are the steady state that the draw path costs every frame.

A state call is redundant when it sets what the same frame already set: at a frame's start
nothing is known, as for a cache that is invalidated each frame.
"""
import collections
import re
import sys

STATE = {
    "glEnable", "glDisable", "glDepthFunc", "glDepthMask", "glDepthRangef", "glStencilFunc", "glStencilOp",
    "glStencilMask", "glBlendFunc", "glColorMask", "glCullFace", "glLineWidth", "glUseProgram",
    "glBindVertexArray", "glActiveTexture", "glBindTexture", "glViewport", "glBindFramebuffer",
}
CALL = re.compile(r"^(gl[A-Za-z0-9]+)\((.*)\)")


def frames(lines):
    frame = []
    for line in lines:
        match = CALL.match(line)
        if not match:
            continue
        frame.append((match.group(1), match.group(2)))
        if match.group(1) == "glFinish":
            yield frame
            frame = []


def count(frame):
    kinds = collections.Counter()
    known = {}
    active_unit = "GL_TEXTURE0"
    for name, args in frame:
        kinds["gl calls"] += 1
        if name.startswith("glDraw"):
            kinds["draw calls"] += 1
        if name.startswith("glUniform"):
            kinds["uniform sets"] += 1
        if name == "glGetUniformLocation":
            kinds["uniform lookups by name"] += 1
        if name not in STATE:
            continue
        kinds["state changes"] += 1
        if name in ("glEnable", "glDisable"):
            key, value = ("cap", args), name
        elif name == "glBindTexture":
            key, value = ("texture", active_unit, args.split(",")[0]), args
        else:
            key, value = name, args
        if name == "glActiveTexture":
            active_unit = args
        if known.get(key) == value:
            kinds["redundant state changes"] += 1
            kinds["redundant " + name] += 1
        known[key] = value
        kinds["  " + name] += 1
    return kinds


def main():
    path = sys.argv[1]
    with open(path, encoding="utf-8", errors="replace") as listing:
        all_frames = list(frames(listing))
    if len(all_frames) < 3:
        sys.exit(f"{path}: fewer than three whole glFinish-delimited frames; trace a render with more --frames")
    steady = all_frames[1:]
    print(f"{len(all_frames)} whole frames in the trace; per steady frame (frames 2-{len(all_frames)}; the first loads tiles):")
    first = count(steady[0])
    for frame in steady[1:]:
        if count(frame) != first:
            print("  (note: steady frames differ; the last one is shown)")
            first = count(steady[-1])
            break
    for key in ["gl calls", "draw calls", "uniform sets", "uniform lookups by name", "state changes",
                "redundant state changes"]:
        print(f"{key:>26}: {first.get(key, 0)}")
    print("state changes by call (redundant ones):")
    for key, value in sorted(((k, v) for k, v in first.items() if k.startswith("  ")), key=lambda kv: -kv[1]):
        print(f"{key:>26}: {value} ({first.get('redundant ' + key.strip(), 0)})")


main()
