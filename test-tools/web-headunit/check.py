#!/usr/bin/env python3
"""Drives the browser head unit (carwindow headunit --web) in headless Chromium over the DevTools
protocol, against a running drive, and checks what a user would see and do:

  the page decodes pictures (frame counter rising, canvas not blank); a click on the app's
  zoom-in rectangle reaches the app; BACKGROUND stops the pictures and FULL brings them back;
  a resize restarts the stream at the new size. It saves a screenshot.

Standard library only. Usage (scripts/web-headunit-check.sh runs it):
  check.py --carwindow PATH --chromium PATH --out FOLDER
Exit status 0 when every check passed.
"""
import argparse, base64, hashlib, http.client, json, os, random, socket, struct, subprocess, sys, time


class DevTools:
    """A minimal WebSocket client (RFC 6455, client frames masked) for one DevTools target."""

    def __init__(self, url):
        host_port, path = url[len("ws://"):].split("/", 1)
        host, port = host_port.split(":")
        self.socket = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.socket.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.socket.recv(4096)
            if not chunk:
                raise RuntimeError("DevTools closed the connection during the handshake")
            response += chunk
        if b" 101 " not in response.split(b"\r\n")[0]:
            raise RuntimeError(f"DevTools refused the WebSocket: {response[:200]!r}")
        self.pending = response.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0

    def _read(self, count):
        while len(self.pending) < count:
            chunk = self.socket.recv(65536)
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            self.pending += chunk
        data, self.pending = self.pending[:count], self.pending[count:]
        return data

    def _frame(self):
        first, second = self._read(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack(">H", self._read(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", self._read(8))[0]
        return first & 0x0F, self._read(length)

    def call(self, method, **params):
        self.next_id += 1
        payload = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        header = bytes([0x81])
        if len(payload) < 126:
            header += bytes([0x80 | len(payload)])
        elif len(payload) < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(payload))
        mask = os.urandom(4)
        self.socket.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        while True:
            opcode, data = self._frame()
            if opcode != 1:
                continue
            message = json.loads(data)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, x, y):
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)


def wait_for(description, condition, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for: {description}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--carwindow", required=True)
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument("--out", required=True)
    parser.add_argument("--drive-only", action="store_true",
                        help="the page of carwindow drive --web (no head unit) instead of carwindow headunit --web")
    arguments = parser.parse_args()
    os.makedirs(arguments.out, exist_ok=True)
    sdl_port = random.randint(20000, 29999)
    web_port = random.randint(30000, 39999)
    devtools_port = random.randint(40000, 47999)
    processes = []
    log = open(os.path.join(arguments.out, "processes.log"), "w")

    def start(command):
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        processes.append(process)
        return process

    passed = []
    try:
        drive = [arguments.carwindow, "drive", "--speed", "2", "--max-seconds", "60",
                 "--out", os.path.join(arguments.out, "drive.h264"), "--no-mp4"]
        if arguments.drive_only:
            start(drive + ["--web", str(web_port)])
            wait_for("the drive's web page", lambda: _get(web_port, "/").startswith("<!doctype html>"))
        else:
            start([arguments.carwindow, "headunit", "--port", str(sdl_port), "--web", str(web_port), "--tap-after", "0",
                   "--out", os.path.join(arguments.out, "received.h264")])
            wait_for("the head unit's web page", lambda: _get(web_port, "/").startswith("<!doctype html>"))
            start(drive + ["--sdl", f"127.0.0.1:{sdl_port}"])
        start([arguments.chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
               f"--remote-debugging-port={devtools_port}", f"--user-data-dir={arguments.out}/profile",
               "--window-size=1300,760", f"http://127.0.0.1:{web_port}/"])
        target = wait_for("Chromium's DevTools", lambda: _page_target(devtools_port))
        page = DevTools(target)
        page.call("Runtime.enable")

        frames = lambda: page.evaluate("window.headUnit ? window.headUnit.frames : 0")
        first = wait_for("decoded pictures", lambda: frames() > 10 and frames(), timeout=40)
        time.sleep(1)
        assert frames() > first, "the frame counter stopped"
        spread = page.evaluate("""(() => { const c = document.getElementById('video');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let min = 255, max = 0; for (let i = 0; i < d.length; i += 4 * 97) { const v = d[i + 1]; min = Math.min(min, v); max = Math.max(max, v); }
            return max - min; })()""")
        assert spread > 40, f"the canvas looks blank (green channel spread {spread})"
        passed.append(f"pictures decoded and drawn: {frames()} frames so far, canvas spread {spread}")

        regions = wait_for("haptic rectangles", lambda: page.evaluate("window.headUnit.regions || []"))
        zoom_in = next(r for r in regions if r["id"] == 1999999001)
        box = page.evaluate("(() => { const b = document.getElementById('video').getBoundingClientRect(); "
                            "return {x: b.left, y: b.top, w: b.width, h: b.height}; })()")
        display = page.evaluate("window.headUnit.display")
        x = box["x"] + (zoom_in["x"] + zoom_in["width"] / 2) * box["w"] / display["width"]
        y = box["y"] + (zoom_in["y"] + zoom_in["height"] / 2) * box["h"] / display["height"]
        taps = lambda: _read(os.path.join(arguments.out, "processes.log")).count("control tapped: zoomIn")
        before = taps()
        page.click(x, y)
        wait_for("the app to report the tap on zoom in", lambda: taps() > before, timeout=10)
        passed.append(f"a click at ({x:.0f}, {y:.0f}) on rectangle #1999999001 reached the app as a zoom-in tap")

        page.evaluate("document.querySelector('[data-level=BACKGROUND]').click()")
        time.sleep(2.5)
        still = frames()
        time.sleep(2)
        assert frames() == still, f"pictures went on in BACKGROUND ({still} -> {frames()})"
        page.evaluate("document.querySelector('[data-level=FULL]').click()")
        wait_for("pictures again after FULL", lambda: frames() > still + 5, timeout=20)
        passed.append(f"BACKGROUND stopped the pictures at {still}; FULL brought them back ({frames()})")

        page.evaluate("document.getElementById('sizes').value = '640x384'; document.getElementById('resize').click()")
        wait_for("the stream at 640x384", lambda: page.evaluate("document.getElementById('video').width") == 640, timeout=20)
        wait_for("pictures at the new size", lambda: frames() > still + 20, timeout=20)
        passed.append("a resize to 640x384 restarted the stream at that size")
        time.sleep(1)
        shot = page.call("Page.captureScreenshot", format="png")
        with open(os.path.join(arguments.out, "web-headunit.png"), "wb") as file:
            file.write(base64.b64decode(shot["data"]))
        passed.append(f"screenshot: {os.path.join(arguments.out, 'web-headunit.png')}")
    except Exception as error:  # every failure ends the run with its reason
        for line in passed:
            print("PASS", line)
        print("FAIL", error)
        print("log:", os.path.join(arguments.out, "processes.log"))
        return 1
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
    for line in passed:
        print("PASS", line)
    return 0


def _get(port, path):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        connection.request("GET", path)
        return connection.getresponse().read().decode(errors="replace")
    except OSError:
        return ""


def _page_target(port):
    try:
        targets = json.loads(_get(port, "/json/list") or "[]")
    except ValueError:
        return None
    pages = [t for t in targets if t.get("type") == "page" and "webSocketDebuggerUrl" in t]
    return pages[0]["webSocketDebuggerUrl"] if pages else None


def _read(path):
    with open(path, errors="replace") as file:
        return file.read()


if __name__ == "__main__":
    sys.exit(main())
