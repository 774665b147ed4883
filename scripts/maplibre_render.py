#!/usr/bin/env python3
"""Render CarWindow styles with MapLibre Native (through mapli) as a reference for looks and speed.

Usage:
    python3 scripts/maplibre_render.py --style assets/styles/day.json --tiles assets/helsinki.pmtiles \
        --views views.json --out-dir out/ [--repeat N] [--glyphs DIR]

views.json is a JSON list of {"name", "lat", "lon", "zoom", "bearing", "pitch", "width", "height"}.
Each view is written to OUT_DIR/<name>.png, and one JSON line per view is printed:
    {"name": ..., "ms_per_frame": ..., "ms_png": ...}
ms_per_frame is the mean wall time of mapli's render call over --repeat frames, after one warm-up
render that loads tiles and glyphs. mapli only returns PNG bytes (no raw-pixel API in 0.4.1), so that
time includes GPU readback and PNG encoding. ms_png estimates the encoding share by compressing the
frame's rows with C zlib at level 1; mapli's own encoder (Rust png crate with fdeflate, zlib header
78 01, adaptive filters) is faster, so ms_png is an upper bound. It is null when Pillow is missing.
ms_per_frame - ms_png is therefore a lower bound of the render-only time.

Tiles (--tiles) may be a .pmtiles file, an .mbtiles file or a folder of z/x/y.pbf files (gzip or
not). Every vector source of the style is served from it. A sprite given as a file path (relative to
the style, as the bundled styles give it) is served too, so both renderers draw the same icons;
sprites on servers are dropped.

Glyphs: MapLibre needs SDF glyph PBFs, laid out as DIR/<fontstack>/<start>-<end>.pbf, e.g.
DIR/Noto Sans Regular/0-255.pbf. Give DIR with --glyphs or the CARWINDOW_GLYPHS environment variable.
carwindow-bench writes them from the bundled fonts (with the same distance fields as CarWindow's own
labels) when it runs this script without a folder, or on request:
    swift run -c release carwindow-bench --write-glyphs glyphs/

Setup: pip install mapli==0.4.1 pmtiles==3.8.1 (Python 3.11 or later), and Pillow for ms_png.
Headless Linux: set EGL_PLATFORM=surfaceless.
"""
import argparse
import gzip
import io
import json
import math
import os
import pathlib
import re
import sqlite3
import sys
import tempfile
import time
import urllib.parse
import zlib

SCHEME = "carwindow-ref"
MAX_SIDE = 4096
MAX_REPEAT = 10000
VIEW_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


def fail(message):
    """Stops with a message that says what was wrong; used for every bad input."""
    print(f"maplibre_render: {message}", file=sys.stderr)
    sys.exit(2)


def open_tiles(path):
    """Returns read(z, x, y) -> bytes | None for a .pmtiles, .mbtiles or z/x/y folder source."""
    p = pathlib.Path(path)
    if p.is_dir():
        def read_folder(z, x, y):
            f = p / str(z) / str(x) / f"{y}.pbf"
            return f.read_bytes() if f.is_file() else None
        return read_folder
    if not p.is_file():
        fail(f"tile source {path} does not exist; give a .pmtiles, .mbtiles or z/x/y folder")
    if p.suffix == ".mbtiles":
        db = sqlite3.connect(f"file:{p}?mode=ro", uri=True, check_same_thread=False)
        def read_mbtiles(z, x, y):
            # MBTiles stores rows in TMS order (y flipped).
            row = db.execute("SELECT tile_data FROM tiles WHERE zoom_level=? AND tile_column=? AND tile_row=?",
                             (z, x, (1 << z) - 1 - y)).fetchone()
            return row[0] if row else None
        return read_mbtiles
    if p.suffix == ".pmtiles":
        try:
            from pmtiles.reader import MmapSource, Reader
        except ImportError:
            fail("reading .pmtiles needs the pmtiles package: pip install pmtiles==3.8.1")
        handle = open(p, "rb")
        reader = Reader(MmapSource(handle))
        return lambda z, x, y: reader.get(z, x, y)
    fail(f"tile source {path} is neither a folder nor a .pmtiles/.mbtiles file")


def load_views(path):
    """Reads and checks views.json, so that a bad view fails before any rendering starts."""
    try:
        views = json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError) as e:
        fail(f"cannot read views file {path}: {e}")
    if not isinstance(views, list) or not views:
        fail(f"{path} must hold a non-empty JSON list of views")
    checked = []
    for i, v in enumerate(views):
        if not isinstance(v, dict):
            fail(f"view {i} in {path} is not an object")
        name = v.get("name")
        if not isinstance(name, str) or not VIEW_NAME.match(name):
            fail(f"view {i}: name must be 1-100 characters of A-Z a-z 0-9 _ . - (it names the PNG file)")
        out = {"name": name}
        for key, lo, hi in (("lat", -85.05, 85.05), ("lon", -180, 180), ("zoom", 0, 24),
                            ("bearing", -360, 360), ("pitch", 0, 60), ("width", 1, MAX_SIDE),
                            ("height", 1, MAX_SIDE)):
            value = v.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or not lo <= value <= hi:
                fail(f"view {name!r}: {key} must be a number in [{lo}, {hi}], got {value!r}")
            out[key] = int(value) if key in ("width", "height") else float(value)
        checked.append(out)
    return checked


def prepare_style(path):
    """Points the style's vector sources, glyphs and local sprite at our scheme handler.

    Returns the style and the sprite's file path without suffix (None when it has none)."""
    try:
        style = json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError) as e:
        fail(f"cannot read style {path}: {e}")
    if not isinstance(style, dict) or not isinstance(style.get("layers"), list):
        fail(f"{path} is not a MapLibre style (no layers list)")
    for source in style.get("sources", {}).values():
        if isinstance(source, dict) and source.get("type") == "vector":
            source.pop("url", None)
            source.pop("bounds", None)
            source["tiles"] = [f"{SCHEME}://tiles/{{z}}/{{x}}/{{y}}.pbf"]
    style["glyphs"] = f"{SCHEME}://glyphs/{{fontstack}}/{{range}}.pbf"
    sprite = style.pop("sprite", None)
    sprite_base = None
    if isinstance(sprite, str) and sprite and "://" not in sprite:
        sprite_base = (pathlib.Path(path).resolve().parent / sprite).resolve()
        style["sprite"] = f"{SCHEME}://sprite/sprite"
    return style, sprite_base


def png_encode_ms(png, repeats):
    """Estimates the PNG encoding share of a mapli render, which mapli cannot leave out.

    mapli encodes with the Rust png crate (fdeflate, fast mode, adaptive row filters). The nearest
    encoder at hand is C zlib at level 1 over unfiltered rows, which is slower than fdeflate, so the
    figure is an upper bound of the real share. Returns None when Pillow (to decode) is missing.
    """
    try:
        from PIL import Image
    except ImportError:
        return None
    image = Image.open(io.BytesIO(png)).convert("RGBA")
    pixels = image.tobytes()
    stride = image.width * 4
    rows = b"".join(b"\0" + pixels[r * stride:(r + 1) * stride] for r in range(image.height))
    start = time.perf_counter()
    for _ in range(repeats):
        zlib.compress(rows, 1)
    return (time.perf_counter() - start) / repeats * 1000


def pipe_to_x264(pool, views, out_dir, output, bitrate, fps):
    """What a user would build today: MapLibre Native -> PNG -> ffmpeg libx264, one frame per view.

    The first view is rendered once before timing (tile and glyph loading). ffmpeg runs as a
    separate process, so encoding overlaps rendering as in a pipelined system. The PNGs are kept
    in memory and written to out_dir after timing, for quality measurements.
    """
    import subprocess

    def render(v):
        return pool.render("style", lon=v["lon"], lat=v["lat"], zoom=v["zoom"], width=v["width"],
                           height=v["height"], bearing=v["bearing"], pitch=v["pitch"])

    render(views[0])
    bufsize = max(int(bitrate / fps), 1000)
    command = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "image2pipe", "-c:v", "png",
               "-framerate", str(fps), "-i", "-", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
               "-profile:v", "baseline", "-pix_fmt", "yuv420p", "-b:v", str(bitrate), "-maxrate", str(bitrate),
               "-bufsize", str(bufsize), "-threads", "1", "-f", "h264", output]
    pngs = []
    start = time.perf_counter()
    encoder = subprocess.Popen(command, stdin=subprocess.PIPE)
    for v in views:
        png = render(v)
        encoder.stdin.write(png)
        pngs.append(png)
    encoder.stdin.close()
    if encoder.wait() != 0:
        fail("ffmpeg libx264 failed; Debian's ffmpeg has libx264")
    seconds = time.perf_counter() - start
    for v, png in zip(views, pngs):
        (out_dir / f"{v['name']}.png").write_bytes(png)
    print(json.dumps({"frames": len(views), "seconds": round(seconds, 4), "fps": round(len(views) / seconds, 3)}),
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--style", required=True, help="MapLibre style JSON")
    ap.add_argument("--tiles", required=True, help=".pmtiles, .mbtiles or z/x/y.pbf folder")
    ap.add_argument("--views", required=True, help="JSON list of views")
    ap.add_argument("--out-dir", required=True, help="folder for <name>.png")
    ap.add_argument("--repeat", type=int, default=1, help="timed frames per view (default 1)")
    ap.add_argument("--glyphs", default=os.environ.get("CARWINDOW_GLYPHS"),
                    help="glyph PBF folder (default: $CARWINDOW_GLYPHS)")
    ap.add_argument("--pipe-h264", metavar="OUT.h264",
                    help="the peer pipeline: render the views in order as one stream, pipe the PNGs into "
                         "ffmpeg libx264 (ultrafast, zerolatency) and write OUT.h264; prints frames, seconds, fps")
    ap.add_argument("--bitrate", type=int, default=600000, help="bits per second for --pipe-h264")
    ap.add_argument("--fps", type=float, default=15, help="frames per second for --pipe-h264")
    a = ap.parse_args()

    if not 1 <= a.repeat <= MAX_REPEAT:
        fail(f"--repeat must be between 1 and {MAX_REPEAT}")
    if not a.glyphs:
        fail("no glyphs: pass --glyphs DIR or set CARWINDOW_GLYPHS (see the docstring for how to make them)")
    glyph_dir = pathlib.Path(a.glyphs).resolve()
    if not glyph_dir.is_dir():
        fail(f"glyph folder {glyph_dir} does not exist")
    views = load_views(a.views)
    style, sprite_base = prepare_style(a.style)
    read_tile = open_tiles(a.tiles)
    out_dir = pathlib.Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    try:
        import mapli
    except ImportError:
        fail("mapli is missing: pip install mapli==0.4.1")

    def handle(request):
        rest = urllib.parse.unquote(request.url.split("://", 1)[1])
        kind, _, path = rest.partition("/")
        data = None
        if kind == "tiles":
            try:
                z, x, y = (int(part) for part in path.split(".")[0].split("/"))
            except ValueError:
                return mapli.Response.no_content()
            data = read_tile(z, x, y)
        elif kind == "sprite" and sprite_base is not None:
            # MapLibre asks for sprite.json / sprite.png, or the @2x pair.
            suffix = path[len("sprite"):] if path.startswith("sprite") else ""
            if suffix in (".json", ".png", "@2x.json", "@2x.png"):
                f = pathlib.Path(str(sprite_base) + suffix)
                if f.is_file():
                    data = f.read_bytes()
        elif kind == "glyphs":
            f = (glyph_dir / path).resolve()
            if f.is_relative_to(glyph_dir) and f.is_file():
                data = f.read_bytes()
        if not data:
            return mapli.Response.no_content()
        return mapli.Response(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)

    mapli.register_scheme_handler(SCHEME, handle)
    with tempfile.TemporaryDirectory() as tmp:
        style_path = pathlib.Path(tmp) / "style.json"
        style_path.write_text(json.dumps(style))
        pool = mapli.RenderPool(workers=1)
        pool.register_style("style", path=str(style_path))
        if a.pipe_h264:
            pipe_to_x264(pool, views, out_dir, a.pipe_h264, a.bitrate, a.fps)
            return
        for v in views:
            def render():
                return pool.render("style", lon=v["lon"], lat=v["lat"], zoom=v["zoom"],
                                   width=v["width"], height=v["height"],
                                   bearing=v["bearing"], pitch=v["pitch"])
            try:
                png = render()  # warm-up: tile and glyph loading stay out of the timing
                start = time.perf_counter()
                for _ in range(a.repeat):
                    png = render()
                ms_frame = (time.perf_counter() - start) / a.repeat * 1000
            except mapli.MapliError as e:
                fail(f"view {v['name']!r}: MapLibre failed: {type(e).__name__}: {e}")
            (out_dir / f"{v['name']}.png").write_bytes(png)
            ms_png = png_encode_ms(png, min(a.repeat, 5))
            print(json.dumps({"name": v["name"], "ms_per_frame": round(ms_frame, 3),
                              "ms_png": None if ms_png is None else round(ms_png, 3)}), flush=True)


if __name__ == "__main__":
    main()
