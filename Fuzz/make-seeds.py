#!/usr/bin/env python3
"""Writes the seed corpus under Fuzz/corpus/ (kept in the repository; run this only to remake it).

usage: Fuzz/make-seeds.py CAPTURE.hex
       Fuzz/make-seeds.py --only web-control rtcp security    (the seeds that need no capture)

CAPTURE.hex is a real SDL Core session, one frame per line ("RX <hex>" from the head unit,
"TX <hex>" to it). Tiles come from Tests/Fixtures, styles from assets/styles.
Each seed is small (a few KB at most) so that every target starts from valid input of each kind.
Crash inputs found by fuzzing are kept beside the seeds as regression-*; this script leaves them.
"""
import gzip, json, os, struct, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
corpus = os.path.join(root, "Fuzz", "corpus")


def write(target, name, data):
    folder = os.path.join(corpus, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


# --- SDL: frames, BSON, RPC -------------------------------------------------------------------

def bson(elements):
    """A BSON document from (key, kind, value) tuples; kind is one of d s doc arr b n i32 i64."""
    body = b""
    for key, kind, value in elements:
        k = key.encode() + b"\0"
        if kind == "s":
            v = value.encode() + b"\0"
            body += b"\x02" + k + struct.pack("<i", len(v)) + v
        elif kind == "d":
            body += b"\x01" + k + struct.pack("<d", value)
        elif kind == "doc":
            body += b"\x03" + k + bson(value)
        elif kind == "arr":
            body += b"\x04" + k + bson([(str(i), t, v) for i, (t, v) in enumerate(value)])
        elif kind == "b":
            body += b"\x08" + k + (b"\1" if value else b"\0")
        elif kind == "n":
            body += b"\x0a" + k
        elif kind == "i32":
            body += b"\x10" + k + struct.pack("<i", value)
        elif kind == "i64":
            body += b"\x12" + k + struct.pack("<q", value)
    return struct.pack("<i", len(body) + 5) + body + b"\0"


def frame(frame_type, service, info, session, payload, message_id, version=5):
    return bytes([(version << 4) | frame_type, service, info, session]) + struct.pack(">II", len(payload), message_id) + payload


def frames(service, session, payload, message_id, chunk):
    """A message as first and consecutive frames of at most `chunk` payload bytes."""
    if len(payload) <= chunk:
        return frame(1, service, 0, session, payload, message_id)
    parts = [payload[i:i + chunk] for i in range(0, len(payload), chunk)]
    out = frame(2, service, 0, session, struct.pack(">II", len(payload), len(parts)), message_id)
    for index, part in enumerate(parts):
        counter = 0 if index == len(parts) - 1 else (index % 255) + 1
        out += frame(3, service, counter, session, part, message_id)
    return out


def rpc(kind, function, correlation, parameters):
    body = json.dumps(parameters, separators=(",", ":")).encode()
    return struct.pack(">III", (kind << 28) | function, correlation, len(body)) + body


def sdl_seeds(capture):
    rx = [bytes.fromhex(line.split()[1]) for line in open(capture) if line.startswith("RX")]
    small = [f for f in rx if len(f) < 1024]
    rpc_ack, video_ack = small[0], next(f for f in small if f[1] == 0x0B and f[2] == 0x02)
    # sdl-stream: the first byte sets the transport read size.
    write("sdl-stream", "core-session-rx", b"\x00" + b"".join(small))
    write("sdl-stream", "core-session-rx-small-reads", b"\x01" + b"".join(small[:4]))
    # A small MTU: the OnHMIStatus that follows takes a first frame and three consecutive ones.
    ack_small_mtu = frame(0, 0x07, 0x02, 1, bson([("hashId", "i32", 65537), ("mtu", "i64", 64),
                                                  ("protocolVersion", "s", "5.3.0")]), 0)
    status = rpc(2, 32768, 0xFFFFFFFF, {"hmiLevel": "FULL", "audioStreamingState": "NOT_AUDIBLE",
                                          "systemContext": "MAIN", "videoStreamingState": "STREAMABLE"})
    write("sdl-stream", "multi-frame-at-mtu-64", b"\x03" + ack_small_mtu + frames(0x07, 1, status, 2, 52)
          + frame(0, 0x00, 0x00, 1, b"", 3))
    video_ack_small = frame(0, 0x0B, 0x02, 1, bson([("mtu", "i32", 64), ("width", "i32", 640),
                                                      ("height", "i32", 360), ("videoProtocol", "s", "RTP"),
                                                      ("videoCodec", "s", "H264")]), 4)
    write("sdl-stream", "video-ack-mtu-64", b"\x10" + rpc_ack + video_ack_small)
    nak = frame(0, 0x0B, 0x03, 1, bson([("rejectedParams", "arr", [("s", "width"), ("s", "videoCodec")]),
                                         ("reason", "s", "too wide")]), 5)
    write("sdl-stream", "video-nak", b"\x20" + rpc_ack + nak)

    # bson: control payloads.
    write("bson", "rpc-start-service-ack", rpc_ack[12:])
    write("bson", "video-start-service-ack", video_ack[12:])
    write("bson", "video-start-service-nak", nak[12:])
    write("bson", "every-type", bson([("d", "d", 1.5), ("s", "s", "text"), ("doc", "doc", [("i", "i32", 1)]),
                                      ("arr", "arr", [("i64", 1 << 40), ("b", True), ("n", None)]),
                                      ("mtu", "i64", 131072), ("width", "d", 800.0)]))

    # rpc: payloads of the RPC service.
    for f in small:
        if f[1] == 0x07 and f[0] & 0x07 == 1:
            payload = f[12:]
            function = struct.unpack(">I", payload[:4])[0] & 0x0FFFFFFF
            write("rpc", f"core-function-{function}-{len(payload)}", payload)
    capability = {"preferredResolution": {"width": 1280, "height": 720}, "maxBitrate": 4000,
                  "supportedFormats": [{"protocol": "RAW", "codec": "H264"}, {"protocol": "RTP", "codec": "H264"}],
                  "hapticSpatialDataSupported": True, "diagonalScreenSize": 8.5, "pixelPerInch": 150,
                  "scale": 1.5, "preferredFPS": 30,
                  "additionalVideoStreamingCapabilities": [{"preferredResolution": {"width": 800, "height": 480},
                                                            "scale": 1}]}
    write("rpc", "get-system-capability-response",
          rpc(1, 48, 3, {"success": True, "resultCode": "SUCCESS",
                         "systemCapability": {"systemCapabilityType": "VIDEO_STREAMING",
                                              "videoStreamingCapability": capability}}))
    write("rpc", "on-touch-event-two-fingers",
          rpc(2, 32780, 0xFFFFFFFF, {"type": "MOVE", "event": [{"id": 0, "ts": [100, 116], "c": [{"x": 10, "y": 20}, {"x": 12, "y": 24}]},
                                                                {"id": 1, "ts": [100], "c": [{"x": 300, "y": 200}]}]}))


# --- Tiles --------------------------------------------------------------------------------------

def varint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def directory(entries):
    """entries: (tile_id, offset, length, run_length); offsets written as offset + 1."""
    out = varint(len(entries))
    previous = 0
    for tile_id, _, _, _ in entries:
        out += varint(tile_id - previous)
        previous = tile_id
    for _, _, _, run in entries:
        out += varint(run)
    for _, _, length, _ in entries:
        out += varint(length)
    for _, offset, _, _ in entries:
        out += varint(offset + 1)
    return out


def archive(root_dir, leaf_dirs, tiles, internal, tile_compression, metadata=b'{"name":"seed"}'):
    sections = [root_dir, metadata, leaf_dirs, tiles]
    offset, fields = 127, b""
    for section in sections:
        fields += struct.pack("<QQ", offset, len(section))
        offset += len(section)
    header = b"PMTiles\x03" + fields + struct.pack("<QQQ", 1, 1, 1) + b"\x01"
    header += bytes([internal, tile_compression, 1, 0, 3])
    header += struct.pack("<iiii", 246000000, 601000000, 251000000, 603000000) + b"\x0e" + struct.pack("<ii", 249000000, 602000000)
    assert len(header) == 127, len(header)
    return header + b"".join(sections)


def tile_seeds(fixtures):
    small = open(os.path.join(fixtures, "helsinki-tiles", "10", "582", "296.pbf"), "rb").read()
    write("mvt", "helsinki-10-582-296", small)
    write("mvt", "helsinki-10-582-296-gzip", gzip.compress(small, mtime=0))
    # A tiny tile made by hand: one layer, one point feature with a string and an int property.
    layer = (b"\x0a\x05roads" + b"\x12\x0d\x08\x01\x12\x02\x00\x00\x18\x01\x22\x03\x09\x02\x04"
             + b"\x1a\x05class" + b"\x22\x06\x0a\x04road" + b"\x28\x80\x20" + b"\x78\x02")
    write("mvt", "hand-made-point", b"\x1a" + varint(len(layer)) + layer)

    gz_tile = gzip.compress(small, mtime=0)
    # Archive 1: gzip directories and tiles; z0 tile, then z1's four tiles as one run.
    root_dir = directory([(0, 0, len(gz_tile), 1), (1, 0, len(gz_tile), 4)])
    write("pmtiles", "archive-gzip", b"\x00" + archive(gzip.compress(root_dir, mtime=0), b"", gz_tile, 2, 2,
                                                         gzip.compress(b'{"name":"seed"}', mtime=0)))
    # Archive 2: uncompressed; the root points at a leaf directory holding z2 tiles.
    tiny = open(os.path.join(corpus, "mvt", "hand-made-point"), "rb").read()
    leaf = directory([(5, 0, len(tiny), 3), (20, 0, len(tiny), 1)])
    root_dir = directory([(0, 0, len(tiny), 1), (5, 0, len(leaf), 0)])
    write("pmtiles", "archive-leaf-uncompressed", b"\x00" + archive(root_dir, leaf, tiny, 1, 1, b"{}"))
    write("pmtiles", "directory-root", b"\x01" + directory([(0, 0, 100, 1), (1, 100, 50, 4), (5, 150, 30, 0), (85, 180, 10, 2)]))
    # The Helsinki archive's own root directory.
    data = open(os.path.join(root, "assets", "helsinki.pmtiles"), "rb").read()
    start, length = struct.unpack("<QQ", data[8:24])
    write("pmtiles", "directory-helsinki-root", b"\x01" + gzip.decompress(data[start:start + length]))


# --- Styles -------------------------------------------------------------------------------------

def style_seeds():
    style = json.load(open(os.path.join(root, "assets", "styles", "day.json")))
    layers, kinds = [], set()
    for layer in style["layers"]:
        key = (layer["type"], "filter" in layer)
        if key not in kinds:
            kinds.add(key)
            layers.append(layer)
    small = dict(style, layers=layers)
    write("style", "day-one-layer-per-kind", json.dumps(small, separators=(",", ":")).encode())
    write("style", "minimal", b'{"version":8,"sources":{},"layers":[{"id":"bg","type":"background","paint":{"background-color":"#fff"}}]}')

    expressions, seen = [], set()
    def collect(value):
        if isinstance(value, list) and value and isinstance(value[0], str):
            text = json.dumps(value, separators=(",", ":"))
            if text not in seen and len(text) < 600:
                seen.add(text)
                expressions.append(text)
        elif isinstance(value, dict) and "stops" in value:
            text = json.dumps(value, separators=(",", ":"))
            if text not in seen:
                seen.add(text)
                expressions.append(text)
    for layer in style["layers"]:
        if "filter" in layer:
            collect(layer["filter"])
        for group in ("paint", "layout"):
            for value in layer.get(group, {}).values():
                collect(value)
    for index, text in enumerate(expressions[:24]):
        write("expression", f"day-{index:02}", text.encode())
    for name, text in [("match", '["match",["get","class"],["primary","trunk"],"#f00","#0f0"]'),
                       ("case-coalesce", '["case",["has","name:fi"],["get","name:fi"],["coalesce",["get","name"],"?"]]'),
                       ("step-length", '["step",["zoom"],0,10,["length",["get","name"]],14,["to-number",["get","rank"],1]]'),
                       ("format-concat", '["format",["concat",["upcase",["get","name"]]," ",["to-string",["id"]]],{"font-scale":1.2}]'),
                       ("legacy-filter", '["all",["==","class","primary"],["!in","brunnel","tunnel"],["has","name"]]'),
                       ("interpolate-color", '["interpolate",["exponential",1.5],["zoom"],10,"rgba(0,0,0,0.5)",14,["to-color","#fff"]]')]:
        write("expression", name, text.encode())


# --- Touch --------------------------------------------------------------------------------------

def touch_event(kind, tick, fingers, elapsed=16):
    """fingers: (id, [(dt, x, y)...]); kinds 0 BEGIN 1 MOVE 2 END 3 CANCEL; positions in pixels;
    a frame tick of `elapsed` ms follows when `tick`."""
    out = bytes([kind | (4 if tick else 0) | (len(fingers) << 4)])
    for finger, samples in fingers:
        out += bytes([finger, len(samples)])
        for dt, x, y in samples:
            out += struct.pack(">hhh", dt, int(x * 4), int(y * 4))
    return out + (struct.pack(">H", elapsed) if tick else b"")


# A MOVE naming no finger is refused, which leaves the recogniser as it was: a bare frame tick.
def frame_tick(elapsed):
    return touch_event(1, True, [], elapsed)


def touch_seeds():
    tap = touch_event(0, False, [(0, [(10, 200, 200)])]) + touch_event(2, True, [(0, [(80, 201, 200)])])
    write("touch", "tap", b"\x00" + tap + frame_tick(500))
    write("touch", "double-tap", b"\x00" + tap + tap + frame_tick(500))
    pan = touch_event(0, False, [(0, [(10, 100, 100)])])
    for step in range(1, 6):
        pan += touch_event(1, step % 2 == 0, [(0, [(16, 100 + 20 * step, 100 + 5 * step)])])
    pan += touch_event(2, True, [(0, [(16, 220, 130)])])
    write("touch", "pan", b"\x10" + pan)
    pinch = touch_event(0, False, [(0, [(10, 300, 200)]), (1, [(0, 500, 260)])])
    for step in range(1, 4):
        pinch += touch_event(1, True, [(0, [(16, 300 - 10 * step, 200)]), (1, [(0, 500 + 10 * step, 260)])])
    pinch += touch_event(2, True, [(0, [(16, 260, 200)])]) + touch_event(2, True, [(1, [(16, 540, 260)])])
    write("touch", "pinch", b"\x02" + pinch)
    cancel = (touch_event(0, False, [(0, [(10, 100, 100)])])
              + touch_event(1, False, [(0, [(16, 160, 100), (8, 170, 100)])]) + touch_event(3, True, []))
    write("touch", "pan-cancelled", b"\x01" + cancel)


# --- The browser head unit's requests, and RTCP feedback ------------------------------------------

WEB_PORT, WEB_TOKEN = 8080, "0123abcd-4567-89ef"   # WebControlTarget's


def web_request(method, path, body=b"", host=f"127.0.0.1:{WEB_PORT}", headers=()):
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"
    for name, value in headers:
        head += f"{name}: {value}\r\n"
    if method == "POST":
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def web_control_seeds():
    """A screen byte (index into WebControlTarget.screens), then a request as the page or others send it."""
    page = [("Origin", f"http://127.0.0.1:{WEB_PORT}"), ("Content-Type", "application/json"), ("X-CarWindow-Token", WEB_TOKEN)]

    def control(name, value, screen=0, headers=page):
        body = json.dumps(value, separators=(",", ":")).encode()
        write("web-control", name, bytes([screen]) + web_request("POST", "/control", body, headers=headers))

    control("touch-begin", {"action": "touch", "type": "BEGIN", "touches": [{"id": 0, "ts": 1234, "x": 400, "y": 240}]})
    control("pinch-move", {"action": "touch", "type": "MOVE", "touches": [{"id": 0, "ts": 1300, "x": 380, "y": 240},
                                                                          {"id": 1, "ts": 1300, "x": 420, "y": 240}]}, screen=5)
    control("level", {"action": "level", "level": "BACKGROUND"})
    control("resize", {"action": "resize", "width": 640, "height": 384})
    control("refuse", {"action": "refuse", "width": 800, "height": 380})
    control("button", {"action": "button", "name": "NAV_ZOOM_IN"})
    control("light", {"action": "light", "night": True})
    control("cross-site-text-plain", {"action": "level", "level": "NONE"},
            headers=[("Origin", "http://evil.example"), ("Content-Type", "text/plain")])
    write("web-control", "rebound-host", b"\x00" + web_request("GET", "/", host=f"evil.example:{WEB_PORT}"))
    write("web-control", "events", b"\x00" + web_request("GET", "/events", headers=[("Origin", f"http://localhost:{WEB_PORT}")]))
    write("web-control", "body-only-extreme-numbers",
          b"\x01" + b'{"action":"touch","type":"END","touches":[{"id":9,"ts":5000000000,"x":1e19,"y":-1e300}]}')


def rtcp_seeds():
    """Operations for RTCPTarget: 0 a packet (length, bytes), 1 a picture after N ms (two bytes),
    2 a PLI, 3 time passing (two bytes); bit 2 sends from 127.0.0.2."""
    pli = bytes([0x81, 206, 0, 2, 0, 0, 0, 1, 0x12, 0x34, 0x56, 0x78])
    fir = bytes([0x84, 206, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78, 1, 0, 0, 0])
    receiver_report = bytes([0x80, 201, 0, 1, 0, 0, 0, 1])
    picture = lambda ms: b"\x01" + struct.pack(">H", ms)
    packet = lambda data: b"\x00" + bytes([len(data)]) + data
    write("rtcp", "pli-flood", b"".join(b"\x02\x02\x02" + picture(66) for _ in range(20)))
    write("rtcp", "compound-report-then-pli", packet(receiver_report + pli) + picture(66) + picture(600))
    write("rtcp", "fir", packet(fir) + picture(66) + b"\x03" + struct.pack(">H", 2000) + packet(fir) + picture(66))
    write("rtcp", "stranger-pli", b"\x06\x06" + picture(66) + b"\x04" + bytes([len(pli)]) + pli + picture(700))
    write("rtcp", "length-beyond-packet", packet(bytes([0x80, 201, 0xFF, 0xFF]) + pli) + picture(66))


def security_seeds():
    """SecurityTarget: a mode byte (bit 0 DTLS, bit 1 handshake first), then steps of an
    operation byte, a 16-bit length and the bytes."""
    def step(operation, data):
        return bytes([operation]) + struct.pack(">H", len(data)) + data
    def query(kind, subject, sequence, json=b"", binary=b""):
        return bytes([kind]) + struct.pack(">I", subject)[1:] + struct.pack(">II", sequence, len(json)) + json + binary
    client_hello_start = bytes([0x16, 0x03, 0x01, 0x00, 0x40]) + bytes([0x01]) + bytes(0x3F)
    error = query(0x20, 2, 7, b'{"id":10,"text":"bad certificate"}', b"\x0a")
    write("security", "handshake-then-video-tls", b"\x02" + step(2, bytes(range(200))) + step(2, bytes(5000)) + step(3, b"\x05" * 64))
    write("security", "handshake-then-video-dtls", b"\x03" + step(2, bytes(range(256)) * 80) + step(3, b"\x10" * 300))
    write("security", "garbage-hello", b"\x00" + step(0, query(0x00, 1, 1, binary=client_hello_start)))
    write("security", "error-notification", b"\x02" + step(0, error) + step(2, b"after the reset"))
    write("security", "encrypted-frame-unprotected", b"\x00" + step(1, frame(1, 0x0B, 0, 1, bytes(40), 1)[:0]
                                                                 + bytes([0x59, 0x0B, 0, 1]) + struct.pack(">II", 40, 1) + bytes(40)))
    write("security", "short-and-unknown-queries", b"\x02" + step(0, b"\x00\x00") + step(0, query(0x30, 1, 1))
          + step(0, query(0x00, 3, 1)) + step(0, bytes([0, 0, 0, 1, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF])))
    write("security", "protect-end-protect", b"\x02" + step(4, b"\x01") + step(2, b"ended") + step(4, b"\x00") + step(2, b"again"))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--only":
        makers = {"web-control": web_control_seeds, "rtcp": rtcp_seeds, "security": security_seeds}
        if not sys.argv[2:] or any(name not in makers for name in sys.argv[2:]):
            sys.exit(f"--only takes some of: {' '.join(makers)}")
        for name in sys.argv[2:]:
            makers[name]()
        sys.exit(0)
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sdl_seeds(sys.argv[1])
    tile_seeds(os.path.join(root, "Tests", "Fixtures"))
    style_seeds()
    touch_seeds()
    web_control_seeds()
    rtcp_seeds()
    security_seeds()
