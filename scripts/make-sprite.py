#!/usr/bin/env python3
"""Draws the project's own map icons and writes them as a MapLibre sprite.

usage: scripts/make-sprite.py [OUTPUT_BASE]   (default: assets/sprites/carwindow)

Writes OUTPUT_BASE.json/.png at pixel ratio 1 and OUTPUT_BASE@2x.json/.png at 2. Every icon is
described below as shapes (discs, rounded boxes, polygons), rasterised here with 4x4
supersampling or, for the SDF icons, as a signed distance field: no icon font and no third-party
artwork, so the sprite carries the project's own licence (see assets/ATTRIBUTION.md). Only the
Python standard library is needed; the output is byte-for-byte the same on every run.
"""
import json
import math
import struct
import sys
import zlib
from pathlib import Path

# --- shapes: each answers "signed distance in logical pixels" (negative inside) -------------


def disc(cx, cy, r):
    return lambda x, y: math.hypot(x - cx, y - cy) - r


def box(x0, y0, x1, y1, radius=0.0):
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    hx, hy = (x1 - x0) / 2 - radius, (y1 - y0) / 2 - radius

    def sdf(x, y):
        qx, qy = abs(x - cx) - hx, abs(y - cy) - hy
        outside = math.hypot(max(qx, 0), max(qy, 0))
        return outside + min(max(qx, qy), 0) - radius
    return sdf


def polygon(points):
    def sdf(x, y):
        best = float("inf")
        inside = False
        n = len(points)
        for i in range(n):
            ax, ay = points[i]
            bx, by = points[(i + 1) % n]
            dx, dy = bx - ax, by - ay
            t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
            best = min(best, math.hypot(x - ax - t * dx, y - ay - t * dy))
            if (ay > y) != (by > y) and x < ax + (y - ay) * dx / (by - ay):
                inside = not inside
        return -best if inside else best
    return sdf


def ring(cx, cy, r, width):
    return lambda x, y: abs(math.hypot(x - cx, y - cy) - r) - width / 2


def union(*shapes):
    return lambda x, y: min(s(x, y) for s in shapes)


def subtract(shape, cut):
    return lambda x, y: max(shape(x, y), -cut(x, y))


def clip_x(shape, minimum):
    return lambda x, y: max(shape(x, y), minimum - x)


# --- icons -----------------------------------------------------------------------------------
# Each icon: logical size, then layers painted in order as (shape, RGBA colour); or, for an SDF
# icon, one shape whose distance field the style colours with icon-color and icon-halo-color.

WHITE = (255, 255, 255, 255)


def badge(colour, symbol, size=17):
    """A round-cornered square in `colour` with a white symbol, 17 logical pixels."""
    return {"size": (size, size),
            "layers": [(box(0.5, 0.5, size - 0.5, size - 0.5, 3.5), (255, 255, 255, 255)),
                       (box(1.5, 1.5, size - 1.5, size - 1.5, 2.5), colour),
                       (symbol, WHITE)]}


ICONS = {
    # P for parking.
    "parking": badge((46, 109, 196, 255), union(
        box(5.5, 4, 7.5, 13),
        clip_x(ring(9.0, 6.9, 2.6, 1.9), 7.0),
        box(6.5, 4, 9.0, 5.2), box(6.5, 8.6, 9.0, 9.8))),
    # A petrol pump: body, window cut out, hose and nozzle.
    "fuel": badge((52, 84, 122, 255), union(
        subtract(box(4.5, 4, 9.5, 13, 0.6), box(5.6, 5.2, 8.4, 7.4)),
        box(3.8, 12.2, 10.2, 13.2),
        polygon([(9.5, 8), (11.6, 8), (12.2, 8.6), (12.2, 11.6), (11.2, 11.6), (11.2, 9), (9.5, 9)]),
        polygon([(11.0, 4.2), (12.3, 5.6), (12.3, 8.2), (11.4, 8.2), (11.4, 6.0), (10.4, 5.0)]))),
    # A lightning bolt for charging electric cars.
    "charging_station": badge((46, 140, 87, 255), polygon(
        [(9.8, 3.4), (5.2, 9.4), (8.2, 9.4), (7.0, 13.8), (11.8, 7.6), (8.8, 7.6)])),
    # A cross for a hospital.
    "hospital": badge((200, 48, 48, 255), union(box(7.3, 4, 9.7, 13), box(4, 7.3, 13, 9.7))),
    # A cup for a cafe.
    "cafe": badge((140, 90, 60, 255), union(
        box(4.2, 6, 10.6, 11.8, 1.5), ring(11.2, 8.6, 1.6, 1.1), box(3.8, 12.4, 11.2, 13.2))),
    # Any other point of interest.
    "poi": badge((110, 110, 120, 255), disc(6.5, 6.5, 2.6), size=13),
    # The route's end: a red pin with a white heart.
    "destination": {"size": (21, 29), "layers": [
        (union(disc(10.5, 10.5, 9.5), polygon([(3.2, 16.4), (17.8, 16.4), (10.5, 28.4)])), (255, 255, 255, 255)),
        (union(disc(10.5, 10.5, 8.2), polygon([(4.4, 16.2), (16.6, 16.2), (10.5, 26.6)])), (204, 38, 51, 255)),
        (disc(10.5, 10.5, 3.4), WHITE)]},
    # A stop on the way: a white disc in a blue ring.
    "waypoint": {"size": (17, 17), "layers": [
        (disc(8.5, 8.5, 8.0), (255, 255, 255, 255)),
        (disc(8.5, 8.5, 6.8), (36, 104, 214, 255)),
        (disc(8.5, 8.5, 3.2), WHITE)]},
    # SDF: an arrow pointing along its line (+x), coloured by the style: one-way streets.
    "oneway": {"size": (13, 9), "sdf": polygon(
        [(1, 3.3), (7.2, 3.3), (7.2, 0.9), (12, 4.5), (7.2, 8.1), (7.2, 5.7), (1, 5.7)])},
    # SDF: the head of the maneuver arrow, pointing north; icon-rotate turns it to the exit.
    "maneuver-head": {"size": (18, 16), "sdf": polygon([(9, 1), (17, 15), (9, 11.5), (1, 15)])},
    # SDF: a road shield, stretched around the road number with icon-text-fit; icon-color
    # fills it and icon-halo-color draws its edge.
    "shield": {"size": (20, 16), "sdf": box(2, 2, 18, 14, 3), "content": [4, 3, 16, 13]},
}

SDF_PADDING = 4  # logical pixels of field around an SDF shape, room for a halo


def render(icon, ratio):
    """RGBA rows (lists of 4-tuples) of one icon at `ratio` device pixels per logical pixel."""
    w, h = icon["size"]
    if "sdf" in icon:
        w, h = w + 2 * SDF_PADDING, h + 2 * SDF_PADDING
    width, height = round(w * ratio), round(h * ratio)
    rows = []
    for py in range(height):
        row = []
        for px in range(width):
            if "sdf" in icon:
                x = (px + 0.5) / ratio - SDF_PADDING
                y = (py + 0.5) / ratio - SDF_PADDING
                # Outline at 0.75, 1/8 per logical pixel: MapLibre's SDF icon convention.
                alpha = max(0.0, min(1.0, 0.75 - icon["sdf"](x, y) / 8))
                row.append((255, 255, 255, round(alpha * 255)))
                continue
            colour = [0.0, 0.0, 0.0, 0.0]  # premultiplied while compositing
            for shape, (r, g, b, a) in icon["layers"]:
                cover = 0
                for sy in range(4):
                    for sx in range(4):
                        x = (px + (sx + 0.5) / 4) / ratio
                        y = (py + (sy + 0.5) / 4) / ratio
                        cover += shape(x, y) <= 0
                alpha = cover / 16 * a / 255
                colour = [c * (1 - alpha) for c in colour]
                colour[0] += r / 255 * alpha
                colour[1] += g / 255 * alpha
                colour[2] += b / 255 * alpha
                colour[3] += alpha
            out_alpha = colour[3]
            if out_alpha <= 0:
                row.append((0, 0, 0, 0))
            else:
                row.append(tuple(round(min(1.0, c / out_alpha) * 255) for c in colour[:3]) + (round(out_alpha * 255),))
        rows.append(row)
    return rows


def write_png(path, width, height, rows):
    raw = b"".join(b"\x00" + bytes(v for pixel in row for v in pixel) for row in rows)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


def build(base, ratio):
    rendered = {name: render(icon, ratio) for name, icon in ICONS.items()}
    # Shelf packing in name order, one pixel apart so linear filtering never bleeds.
    sheet_width = 128 * ratio
    x = y = shelf = 0
    index = {}
    for name in sorted(rendered):
        rows = rendered[name]
        w, h = len(rows[0]), len(rows)
        if x + w > sheet_width:
            x, y, shelf = 0, y + shelf + 1, 0
        index[name] = {"x": x, "y": y, "width": w, "height": h, "pixelRatio": ratio}
        if "sdf" in ICONS[name]:
            index[name]["sdf"] = True
        if "content" in ICONS[name]:
            # Where text goes when icon-text-fit stretches the icon, in device pixels.
            pad = SDF_PADDING if "sdf" in ICONS[name] else 0
            index[name]["content"] = [round((v + pad) * ratio) for v in ICONS[name]["content"]]
        x += w + 1
        shelf = max(shelf, h)
    sheet_height = y + shelf
    sheet = [[(0, 0, 0, 0)] * sheet_width for _ in range(sheet_height)]
    for name, entry in index.items():
        for dy, row in enumerate(rendered[name]):
            sheet[entry["y"] + dy][entry["x"]:entry["x"] + len(row)] = row
    suffix = "" if ratio == 1 else f"@{ratio}x"
    write_png(Path(f"{base}{suffix}.png"), sheet_width, sheet_height, sheet)
    Path(f"{base}{suffix}.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    print(f"{base}{suffix}.png: {sheet_width}x{sheet_height}, {len(index)} icons")


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parent.parent / "assets/sprites/carwindow")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    for pixel_ratio in (1, 2):
        build(out, pixel_ratio)
