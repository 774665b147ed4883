#!/usr/bin/env python3
"""Writes a z/x/y tile folder of hostile vector tiles, for measuring what one tile may cost.

Every tile holds one primary road of --vertices points (a dense zigzag across the whole tile,
which no simplification by distance can shorten) in `transportation`, and the same line with a
name in `transportation_name` (unless --no-names), so the bundled styles draw it as casing, road
and labels.

    scripts/make-hostile-tiles.py /tmp/hostile --tiles 25
    /usr/bin/time -v carwindow render --tiles /tmp/hostile --zoom 14 --size 2048x2048 \
        --lat 60.168842 --lon 24.949951 --out /tmp/hostile.png

--tiles 1 writes the tile under that centre; --tiles 25 the 5 x 5 tiles around it, which a
2048 x 2048 view at zoom 14 centred on the middle tile (the command above) covers exactly.
--holes 99999 writes a water polygon of 100,000 rings instead. Needs only the standard library.
"""
import argparse
import json
import math
import os
import random


def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number, wire_type, payload):
    if wire_type == 2:
        return varint(number << 3 | 2) + varint(len(payload)) + payload
    return varint(number << 3 | wire_type) + payload


def zigzag(value):
    return (value << 1) ^ (value >> 31)


def hostile_line(vertices, seed):
    """A MoveTo and LineTo stream: steps of up to 100 units bounced inside the 4096 extent."""
    rng = random.Random(seed)
    x, y = 2048, 2048
    commands = [9, zigzag(x), zigzag(y), (vertices - 1) << 3 | 2]
    for _ in range(vertices - 1):
        dx, dy = rng.randint(-100, 100), rng.randint(-100, 100)
        if not 0 <= x + dx < 4096:
            dx = -dx
        if not 0 <= y + dy < 4096:
            dy = -dy
        x, y = x + dx, y + dy
        commands += [zigzag(dx), zigzag(dy)]
    return b"".join(varint(c) for c in commands)


def polygon_with_holes(holes):
    """The tile's square, then `holes` square holes of 4 units on a grid."""
    commands = [9, 0, 0, 3 << 3 | 2, zigzag(4096), 0, 0, zigzag(4096), zigzag(-4096), 0, 15]
    per_row = math.ceil(math.sqrt(holes))
    spacing = 4000 // per_row
    cx, cy = 0, 4096
    for index in range(holes):
        x, y = 40 + (index % per_row) * spacing, 40 + (index // per_row) * spacing
        commands += [9, zigzag(x - cx), zigzag(y - cy), 3 << 3 | 2, 0, zigzag(4), zigzag(4), 0, 0, zigzag(-4), 15]
        cx, cy = x + 4, y
    return b"".join(varint(c) for c in commands)


def layer(name, geometry, keys, values, geometry_type=2):
    """One layer with one feature whose tags pair key i with value i."""
    tags = b"".join(varint(i) + varint(i) for i in range(len(keys)))
    feature = field(1, 0, varint(1)) + field(2, 2, tags) + field(3, 0, varint(geometry_type)) + field(4, 2, geometry)
    body = field(15, 0, varint(2)) + field(1, 2, name.encode()) + field(2, 2, feature)
    for key in keys:
        body += field(3, 2, key.encode())
    for value in values:
        body += field(4, 2, field(1, 2, value.encode()))
    body += field(5, 0, varint(4096))
    return field(3, 2, body)


def tile_of(lat, lon, zoom):
    n = 1 << zoom
    x = int((lon + 180) / 360 * n)
    y = int((1 - math.asinh(math.tan(math.radians(lat))) / math.pi) / 2 * n)
    return x, y


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--tiles", type=int, choices=[1, 25], default=1)
    parser.add_argument("--vertices", type=int, default=1_000_000)
    parser.add_argument("--zoom", type=int, default=14)
    parser.add_argument("--lat", type=float, default=60.1699)
    parser.add_argument("--lon", type=float, default=24.9415)
    parser.add_argument("--holes", type=int, default=0,
                        help="write a water polygon with this many holes instead of the road")
    parser.add_argument("--no-names", action="store_true",
                        help="leave out transportation_name, so only the road is drawn (no labels)")
    args = parser.parse_args()

    cx, cy = tile_of(args.lat, args.lon, args.zoom)
    radius = 0 if args.tiles == 1 else 2
    for index, (x, y) in enumerate((cx + dx, cy + dy) for dy in range(-radius, radius + 1)
                                   for dx in range(-radius, radius + 1)):
        if args.holes:
            data = layer("water", polygon_with_holes(args.holes), [], [], geometry_type=3)
        else:
            data = layer("transportation", hostile_line(args.vertices, seed=index), ["class"], ["primary"])
        if not args.no_names and not args.holes:
            data += layer("transportation_name", hostile_line(args.vertices, seed=index), ["class", "name:latin"],
                          ["primary", "Hostile Road"])
        folder = os.path.join(args.folder, str(args.zoom), str(x))
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{y}.pbf"), "wb") as file:
            file.write(data)
    with open(os.path.join(args.folder, "metadata.json"), "w") as file:
        json.dump({"name": "hostile", "minzoom": args.zoom, "maxzoom": args.zoom}, file)
    print(f"{args.tiles} tile(s) of {len(data):,} bytes at zoom {args.zoom} around {cx}/{cy} in {args.folder}")


if __name__ == "__main__":
    main()
