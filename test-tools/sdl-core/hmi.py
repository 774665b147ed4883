#!/usr/bin/env python3
"""A headless HMI for SmartDeviceLink Core (tested with SDL Core 8.2.0).

It connects to Core's HMI WebSocket (ws://127.0.0.1:8087 by default), registers the HMI
components, answers every request Core sends, activates the navigation app and can act as a
driver would: touch the screen, press buttons, change the app's HMI level, resize the video,
refuse video sizes. Everything it sends and receives is logged, one JSON object per line.

Python 3 standard library only; the WebSocket client is implemented here.

Usage:
    hmi.py [options]                 run the HMI (and the default scenario, unless --no-scenario)
    hmi.py ctl [--control PATH] CMD  send one command to a running HMI and print its answer

Commands (scenario steps, control channel and `ctl` share them):
    activate                         SDL.ActivateApp for the app (FULL)
    level NONE|BACKGROUND|LIMITED|FULL
                                     LIMITED: BasicCommunication.OnAppDeactivated
                                     BACKGROUND: OnEventChanged EMBEDDED_NAVI active
                                     NONE: OnExitApplication USER_EXIT (then EMBEDDED_NAVI ended)
                                     FULL: EMBEDDED_NAVI ended, then SDL.ActivateApp
    touch X Y                        UI.OnTouchEvent BEGIN then END at integer X,Y
    drag X1 Y1 X2 Y2                 BEGIN, a few MOVEs, END
    touch-haptic [ID]                touch the centre of a haptic rectangle the app sent
                                     (the one with ID, else the first)
    button NAME [LONG]               Buttons.OnButtonEvent DOWN/UP + Buttons.OnButtonPress
    resize W H [SCALE]               BasicCommunication.OnSystemCapabilityUpdated VIDEO_STREAMING
    refuse WxH [WxH...]              refuse these sizes in Navigation.SetVideoConfig
    refuse none                      accept every size again
    sleep SECONDS
    mark                             the number of the last event (for `wait ... since=N`)
    wait KIND [TIMEOUT] [since=N] [key=value|key!=value ...]
                                     wait for an event (seq > since, default: now)
    events [since=N] [KIND]          the events recorded, one JSON line each
    status                           the HMI's state as JSON
    quit                             stop the HMI

Event kinds: connected, disconnected, ready, registered, unregistered, activated,
activate_failed, level, set_video_config, start_stream, stop_stream, start_audio_stream,
stop_audio_stream, video_data, audio_data, haptic, subscribe_button, unsubscribe_button,
app_capability, close_application, video_file_flow, video_file_idle, audio_file_flow, audio_file_idle, touch, button,
resize, refuse, request, notification. video_data (Navigation.OnVideoDataStreaming, available
true/false) says whether video reaches Core; Core sends false 1 s (VideoDataStoppedTimeout)
after the last data, or at once when the service ends.
"""

import argparse
import base64
import hashlib
import json
import os
import random
import shlex
import socket
import struct
import sys
import threading
import time

# --------------------------------------------------------------------------------------------
# WebSocket client (RFC 6455), just what an HMI needs.
# --------------------------------------------------------------------------------------------

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class WebSocketClosed(Exception):
    pass


class WebSocket:
    """A blocking WebSocket client: one reader thread calls recv(), any thread may send."""

    def __init__(self, host, port, path="/", timeout=5.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.send_lock = threading.Lock()
        self.closed = False
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                   f"Sec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise WebSocketClosed("closed during the handshake")
            self.buffer += chunk
            if len(self.buffer) > 65536:
                raise WebSocketClosed("handshake answer too long")
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        if len(lines[0].split()) < 2 or lines[0].split()[1] != "101":
            raise WebSocketClosed(f"upgrade refused: {lines[0]}")
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        expected = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        if headers.get("sec-websocket-accept") != expected:
            raise WebSocketClosed("bad Sec-WebSocket-Accept")
        self.sock.settimeout(None)

    def _read_exact(self, count):
        while len(self.buffer) < count:
            try:
                chunk = self.sock.recv(max(65536, count - len(self.buffer)))
            except OSError as error:
                raise WebSocketClosed(str(error))
            if not chunk:
                raise WebSocketClosed("connection closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    @staticmethod
    def _frame(opcode, payload, fin=True):
        """One client frame: masked, as RFC 6455 requires of clients."""
        header = bytearray([(0x80 if fin else 0) | opcode])
        length = len(payload)
        if length < 126:
            header.append(0x80 | length)
        elif length < 65536:
            header.append(0x80 | 126)
            header += struct.pack("!H", length)
        else:
            header.append(0x80 | 127)
            header += struct.pack("!Q", length)
        mask = os.urandom(4)
        header += mask
        # XOR with the mask through one big integer: fast enough for JSON messages.
        repeated = (mask * (length // 4 + 1))[:length]
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(length, "big") \
            if length else b""
        return bytes(header) + masked

    def _send_frames(self, frames):
        with self.send_lock:   # one message's frames go out together, never interleaved
            if self.closed:
                raise WebSocketClosed("closed")
            try:
                self.sock.sendall(b"".join(frames))
            except OSError as error:
                self.closed = True
                raise WebSocketClosed(str(error))

    def _send_frame(self, opcode, payload, fin=True):
        self._send_frames([self._frame(opcode, payload, fin)])

    def send_text(self, text, fragment_size=None):
        """Sends one text message, in frames of `fragment_size` bytes when given."""
        data = text.encode("utf-8")
        if fragment_size and len(data) > fragment_size:
            pieces = [data[i:i + fragment_size] for i in range(0, len(data), fragment_size)]
            self._send_frames([self._frame(OP_TEXT if index == 0 else OP_CONT, piece, fin=index == len(pieces) - 1)
                               for index, piece in enumerate(pieces)])
        else:
            self._send_frame(OP_TEXT, data)

    def recv(self):
        """The next whole text (or binary) message; answers pings; raises WebSocketClosed."""
        message, message_opcode = None, None
        while True:
            first, second = self._read_exact(2)
            fin, opcode = first & 0x80, first & 0x0F
            masked, length = second & 0x80, second & 0x7F
            if length == 126:
                length = struct.unpack("!H", self._read_exact(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self._read_exact(8))[0]
            mask = self._read_exact(4) if masked else None
            payload = self._read_exact(length)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == OP_PING:
                self._send_frame(OP_PONG, payload)
                continue
            if opcode == OP_PONG:
                continue
            if opcode == OP_CLOSE:
                try:
                    self._send_frame(OP_CLOSE, payload[:2])
                except WebSocketClosed:
                    pass
                self.close()
                raise WebSocketClosed("closed by the server")
            if opcode in (OP_TEXT, OP_BINARY):
                message, message_opcode = bytearray(payload), opcode
            elif opcode == OP_CONT:
                if message is None:
                    raise WebSocketClosed("continuation without a first frame")
                message += payload
            else:
                raise WebSocketClosed(f"unknown opcode {opcode}")
            if fin:
                return bytes(message).decode("utf-8", "replace") if message_opcode == OP_TEXT else bytes(message)

    def ping(self, payload=b"hmi"):
        self._send_frame(OP_PING, payload)

    def close(self):
        if not self.closed:
            try:
                self._send_frame(OP_CLOSE, struct.pack("!H", 1000))
            except WebSocketClosed:
                pass
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


# --------------------------------------------------------------------------------------------
# What the HMI answers
# --------------------------------------------------------------------------------------------

RESULT = {"SUCCESS": 0, "UNSUPPORTED_REQUEST": 1, "UNSUPPORTED_RESOURCE": 2, "DISALLOWED": 3,
          "REJECTED": 4, "ABORTED": 5, "IGNORED": 6, "RETRY": 7, "IN_USE": 8, "TIMED_OUT": 10,
          "INVALID_DATA": 11, "INVALID_ID": 13, "APPLICATION_NOT_REGISTERED": 15, "GENERIC_ERROR": 22,
          "USER_DISALLOWED": 23}

COMPONENTS = ["BasicCommunication", "UI", "VR", "TTS", "Navigation", "VehicleInfo", "Buttons", "RC",
              "AppService"]

SUBSCRIPTIONS = [
    "BasicCommunication.OnAppRegistered", "BasicCommunication.OnAppUnregistered",
    "BasicCommunication.OnSDLClose", "BasicCommunication.OnSDLPersistenceComplete",
    "BasicCommunication.OnPutFile", "BasicCommunication.OnFileRemoved",
    "BasicCommunication.OnResumeAudioSource", "BasicCommunication.OnSystemCapabilityUpdated",
    "BasicCommunication.OnAppCapabilityUpdated", "BasicCommunication.OnServiceUpdate",
    "BasicCommunication.OnAppPropertiesChange", "BasicCommunication.OnSystemRequest",
    "Navigation.OnVideoDataStreaming", "Navigation.OnAudioDataStreaming", "Navigation.OnTBTClientState",
    "Navigation.OnWayPointChange",
    "Buttons.OnButtonSubscription",  # not in Core 8.2 (it sends Buttons.SubscribeButton requests)
    "UI.OnRecordStart", "UI.OnUpdateFile", "UI.OnUpdateSubMenu",
    "SDL.OnStatusUpdate", "SDL.OnAppPermissionChanged", "SDL.OnSDLConsentNeeded", "SDL.AddStatisticsInfo",
    "SDL.OnSystemError", "SDL.OnPolicyUpdate", "SDL.OnDeviceStateChanged",
    "RC.OnRCStatus", "RC.OnInteriorVehicleData", "AppService.OnAppServiceData",
    "VehicleInfo.OnVehicleData",
]

NAV_BUTTONS = ["NAV_CENTER_LOCATION", "NAV_ZOOM_IN", "NAV_ZOOM_OUT", "NAV_PAN_UP", "NAV_PAN_UP_RIGHT",
               "NAV_PAN_RIGHT", "NAV_PAN_DOWN_RIGHT", "NAV_PAN_DOWN", "NAV_PAN_DOWN_LEFT", "NAV_PAN_LEFT",
               "NAV_PAN_UP_LEFT", "NAV_TILT_TOGGLE", "NAV_ROTATE_CLOCKWISE", "NAV_ROTATE_COUNTERCLOCKWISE",
               "NAV_HEADING_TOGGLE"]
OTHER_BUTTONS = ["OK", "PLAY_PAUSE", "SEEKLEFT", "SEEKRIGHT", "TUNEUP", "TUNEDOWN"] + \
    [f"PRESET_{i}" for i in range(10)] + ["CUSTOM_BUTTON", "SEARCH"]

LANGUAGES = ["EN-US", "EN-GB", "DE-DE", "FR-FR", "ES-ES", "IT-IT", "FI-FI", "SV-SE"]

H264_RAW = {"protocol": "RAW", "codec": "H264"}
H264_RTP = {"protocol": "RTP", "codec": "H264"}


# A screen with neither touch nor haptic data (--no-touch): the app must draw its own focus.
TOUCHLESS = False


def resolution(width, height):
    return {"resolutionWidth": int(width), "resolutionHeight": int(height)}


def video_capability(width=800, height=480, scale=None, additional=True):
    capability = {
        "preferredResolution": resolution(width, height),
        "maxBitrate": 10000,
        "supportedFormats": [dict(H264_RAW), dict(H264_RTP)],
        "hapticSpatialDataSupported": not TOUCHLESS,
        "diagonalScreenSize": 8,
        "pixelPerInch": 117,
        "scale": 1 if scale is None else scale,
        "preferredFPS": 15,
    }
    if additional:
        def mode(w, h, s):
            return {"preferredResolution": resolution(w, h), "hapticSpatialDataSupported": not TOUCHLESS,
                    "diagonalScreenSize": 8, "pixelPerInch": 117, "scale": s}
        capability["additionalVideoStreamingCapabilities"] = [
            mode(320, 200, 1), mode(480, 320, 1), mode(400, 380, 1), mode(800, 240, 1),
            mode(800, 380, 1.5), mode(800, 380, 2)]
    return capability


def text_fields():
    names = ["mainField1", "mainField2", "mainField3", "mainField4", "statusBar", "mediaClock",
             "mediaTrack", "templateTitle", "alertText1", "alertText2", "alertText3",
             "scrollableMessageBody", "initialInteractionText", "navigationText1", "navigationText2",
             "ETA", "totalDistance", "navigationText", "audioPassThruDisplayText1",
             "audioPassThruDisplayText2", "sliderHeader", "sliderFooter", "notificationText",
             "menuName", "secondaryText", "tertiaryText", "timeToDestination", "turnText",
             "menuTitle", "locationName", "locationDescription", "addressLines", "phoneNumber",
             "subtleAlertText1", "subtleAlertText2", "subtleAlertSoftButtonText"]
    return [{"name": n, "characterSet": "UTF_8", "width": 500, "rows": 1} for n in names]


def ui_capabilities():
    audio = {"samplingRate": "44KHZ", "bitsPerSample": "16_BIT", "audioType": "PCM"}
    return {
        "displayCapabilities": {
            "displayType": "SDL_GENERIC", "displayName": "CarWindow test HMI",
            "textFields": text_fields(),
            "imageFields": [{"name": n, "imageTypeSupported": ["GRAPHIC_PNG"],
                             "imageResolution": resolution(64, 64)}
                            for n in ["softButtonImage", "choiceImage", "menuIcon", "cmdIcon", "appIcon",
                                      "graphic", "turnIcon"]],
            "mediaClockFormats": ["CLOCK1", "CLOCK2", "CLOCK3", "CLOCKTEXT1", "CLOCKTEXT2", "CLOCKTEXT3",
                                  "CLOCKTEXT4"],
            "imageCapabilities": ["DYNAMIC", "STATIC"],
            "graphicSupported": True,
            "templatesAvailable": ["DEFAULT", "MEDIA", "NON-MEDIA", "NAV_FULLSCREEN_MAP", "NAV_LIST",
                                   "NAV_KEYBOARD", "TEXT_WITH_GRAPHIC", "GRAPHIC_WITH_TEXT"],
            "screenParams": {"resolution": resolution(800, 480),
                             "touchEventAvailable": {"pressAvailable": not TOUCHLESS,
                                                     "multiTouchAvailable": not TOUCHLESS,
                                                     "doublePressAvailable": False}},
            "numCustomPresetsAvailable": 8,
        },
        "audioPassThruCapabilities": audio,
        "audioPassThruCapabilitiesList": [audio],
        "pcmStreamCapabilities": {"samplingRate": "16KHZ", "bitsPerSample": "16_BIT", "audioType": "PCM"},
        "hmiZoneCapabilities": "FRONT",
        "softButtonCapabilities": [{"shortPressAvailable": True, "longPressAvailable": True,
                                    "upDownAvailable": True, "imageSupported": True, "textSupported": True}],
        "hmiCapabilities": {"navigation": True, "phoneCall": True, "videoStreaming": True},
        "systemCapabilities": {
            "navigationCapability": {"sendLocationEnabled": True, "getWayPointsEnabled": True},
            "phoneCapability": {"dialNumberEnabled": True},
            "videoStreamingCapability": video_capability(),
        },
    }


def button_capabilities():
    return {
        "capabilities": [{"name": n, "shortPressAvailable": True, "longPressAvailable": True,
                          "upDownAvailable": True} for n in OTHER_BUTTONS + NAV_BUTTONS],
        "presetBankCapabilities": {"onScreenPresetsAvailable": True},
    }


def system_time():
    now = time.time()
    t = time.gmtime(now)
    return {"millisecond": int(now * 1000) % 1000, "second": t.tm_sec, "minute": t.tm_min, "hour": t.tm_hour,
            "day": t.tm_mday, "month": t.tm_mon, "year": t.tm_year, "tz_hour": 0, "tz_minute": 0}


def parse_size(text):
    try:
        width, height = text.lower().split("x")
        return int(width), int(height)
    except ValueError:
        raise ValueError(f"a size is WIDTHxHEIGHT, like 800x480; got {text!r}")


# --------------------------------------------------------------------------------------------
# The HMI
# --------------------------------------------------------------------------------------------

class App:
    """What the HMI knows of one registered app."""

    def __init__(self, params):
        application = params.get("application", {})
        self.app_id = application.get("appID")
        self.policy_id = application.get("policyAppID")
        self.name = application.get("appName")
        self.app_types = application.get("appType", [])
        self.level = "NONE"           # the regular level we put it in
        self.embedded_navi = False    # the EMBEDDED_NAVI event we raised (BACKGROUND)
        self.haptic_rects = []
        self.buttons = set()
        self.video_config = None
        self.streaming = False
        self.audio_streaming = False

    def effective_level(self):
        if self.embedded_navi and self.level in ("FULL", "LIMITED"):
            return "BACKGROUND"
        return self.level

    def summary(self):
        return {"appID": self.app_id, "policyAppID": self.policy_id, "name": self.name,
                "appType": self.app_types, "level": self.effective_level(), "regularLevel": self.level,
                "embeddedNavi": self.embedded_navi, "videoConfig": self.video_config,
                "streaming": self.streaming, "audioStreaming": self.audio_streaming,
                "hapticRects": self.haptic_rects, "buttons": sorted(self.buttons)}


class FileWatcher(threading.Thread):
    """Watches Core's stream consumer file: `<kind>_file_flow` when bytes start arriving (after
    a pause or a truncation), `<kind>_file_idle` when none arrived for `idle_after` seconds.

    Core writes the file through a buffered stream (8 KiB, never flushed while streaming), so
    a slow stream (keep-alives at a red light) looks idle here while Core still receives it:
    Navigation.OnVideoDataStreaming (the video_data event) is the signal for data reaching Core."""

    def __init__(self, hmi, kind, path, idle_after=1.5, interval=0.1):
        super().__init__(daemon=True, name=f"watch-{kind}")
        self.hmi, self.kind, self.path = hmi, kind, path
        self.idle_after, self.interval = idle_after, interval
        self.size = None
        self.flowing = False
        self.last_growth = 0.0
        self.total = 0      # bytes seen written, over truncations
        self.restarts = 0   # truncations seen (Core opens the file again per stream)

    def run(self):
        while not self.hmi.stopping.is_set():
            try:
                size = os.stat(self.path).st_size
            except OSError:
                size = None
            now = time.monotonic()
            grew = False
            if size is not None:
                if self.size is None or size < self.size:
                    if self.size is not None:
                        self.restarts += 1
                    grew = size > 0
                    self.total += size
                elif size > self.size:
                    grew = True
                    self.total += size - self.size
            self.size = size
            if grew:
                self.last_growth = now
                if not self.flowing:
                    self.flowing = True
                    self.hmi.event(f"{self.kind}_file_flow", size=size, total=self.total)
            elif self.flowing and now - self.last_growth >= self.idle_after:
                self.flowing = False
                self.hmi.event(f"{self.kind}_file_idle", size=size, total=self.total)
            time.sleep(self.interval)

    def summary(self):
        return {"path": self.path, "size": self.size, "total": self.total, "flowing": self.flowing,
                "truncations": self.restarts}


class HMI:
    def __init__(self, options):
        self.options = options
        self.url_host, self.url_port, self.url_path = self.parse_url(options.url)
        self.ws = None
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.stopping = threading.Event()
        self.events = []
        self.seq = 0
        self.next_id = 5_000_000
        self.pending = {}            # our request id -> (method, callback)
        self.apps = {}               # appID -> App
        self.refused = set(parse_size(s) for s in options.refuse)
        self.started = time.monotonic()
        self.log_file = open(options.log, "a", buffering=1) if options.log else None
        # Policy ids of apps to bring back to FULL when they register again after a loss.
        self.reactivate = set()
        self.ccpu_version = options.ccpu_version or f"carwindow-hmi-{int(time.time())}-{os.getpid()}"
        self.connected = False
        self.video_data = None   # the last Navigation.OnVideoDataStreaming: data reaching Core
        self.audio_data = None
        self.watchers = {}
        if options.video_file:
            self.watchers["video"] = FileWatcher(self, "video", options.video_file)
        if options.audio_file:
            self.watchers["audio"] = FileWatcher(self, "audio", options.audio_file)

    @staticmethod
    def parse_url(url):
        rest = url.split("://", 1)[-1]
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.rpartition(":")
        if not host:
            host, port = hostport, "8087"
        return host, int(port), "/" + path

    # ---- logging and events ----------------------------------------------------------------

    def log(self, record):
        record = dict(record)
        record["t"] = round(time.time(), 3)
        if self.log_file:
            with self.lock:
                self.log_file.write(json.dumps(record, separators=(",", ":")) + "\n")

    def say(self, text):
        if not self.options.quiet:
            sys.stderr.write(f"[hmi {time.strftime('%H:%M:%S')}] {text}\n")
            sys.stderr.flush()
        self.log({"note": text})

    def event(self, kind, **data):
        with self.lock:
            self.seq += 1
            record = {"seq": self.seq, "kind": kind, "time": round(time.time(), 3)}
            record.update(data)
            self.events.append(record)
            if len(self.events) > 20000:
                del self.events[:5000]
            self.changed.notify_all()
        self.log({"event": record})
        if kind not in ("request", "notification"):
            details = " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in data.items()
                               if k not in ("rects",))
            self.say(f"event {kind} {details}".rstrip())
        return record

    def wait_for(self, kind, timeout, since, filters):
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for record in self.events:
                    if record["seq"] > since and record["kind"] == kind and self.matches(record, filters):
                        return record
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.stopping.is_set():
                    return None
                self.changed.wait(min(remaining, 0.5))

    @staticmethod
    def matches(record, filters):
        for key, negate, value in filters:
            actual = record.get(key)
            if isinstance(actual, bool) or actual is None or isinstance(actual, (dict, list)):
                text = json.dumps(actual, separators=(",", ":"))
            else:
                text = str(actual)
            if (text == value) == negate:
                return False
        return True

    # ---- sending ---------------------------------------------------------------------------

    def send(self, message):
        message = dict(message)
        message["jsonrpc"] = "2.0"
        text = json.dumps(message, separators=(",", ":"))
        ws = self.ws
        self.log({"dir": "out", "msg": message})
        if ws is None:
            raise WebSocketClosed("not connected to Core")
        ws.send_text(text)

    def request(self, method, params=None, callback=None):
        with self.lock:
            self.next_id += 1
            ident = self.next_id
            self.pending[ident] = (method, callback)
        message = {"id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return ident

    def notify(self, method, params=None):
        message = {"method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def respond(self, request, params=None, code="SUCCESS"):
        result = {"code": RESULT[code], "method": request["method"]}
        if params:
            result.update(params)
        self.send({"id": request["id"], "result": result})

    def respond_error(self, request, code, message, data=None):
        error = {"code": RESULT[code], "message": message, "data": {"method": request["method"]}}
        if data:
            error["data"].update(data)
        self.send({"id": request["id"], "error": error})

    # ---- connection ------------------------------------------------------------------------

    def connection_loop(self):
        announced_waiting = False
        while not self.stopping.is_set():
            try:
                ws = WebSocket(self.url_host, self.url_port, self.url_path)
            except (OSError, WebSocketClosed) as error:
                if not announced_waiting:
                    self.say(f"waiting for Core at {self.options.url} ({error})")
                    announced_waiting = True
                self.stopping.wait(self.options.retry_interval)
                continue
            announced_waiting = False
            self.ws = ws
            self.connected = True
            self.event("connected", url=self.options.url)
            try:
                self.handshake()
                while not self.stopping.is_set():
                    text = ws.recv()
                    self.received(text)
            except WebSocketClosed as error:
                if not self.stopping.is_set():
                    self.say(f"lost Core: {error}")
            except Exception as error:  # a bug here must not kill the HMI
                self.say(f"error in the connection loop: {error!r}")
                ws.close()
            self.ws = None
            self.connected = False
            self.video_data = self.audio_data = None
            with self.lock:
                for app in self.apps.values():
                    if app.level == "FULL" and not app.embedded_navi:
                        self.reactivate.add(app.policy_id)
                lost = list(self.apps.keys())
                self.apps.clear()
                for ident, (method, callback) in list(self.pending.items()):
                    if callback:
                        try:
                            callback(None)
                        except Exception:
                            pass
                self.pending.clear()
            if not self.stopping.is_set():
                self.event("disconnected", apps=lost)
                self.stopping.wait(self.options.retry_interval)

    def handshake(self):
        for component in COMPONENTS:
            self.request("MB.registerComponent", {"componentName": component})
        for name in SUBSCRIPTIONS:
            self.request("MB.subscribeTo", {"propertyName": name})
        self.notify("BasicCommunication.OnReady")
        # Core postpones every TLS handshake (protected services) until the HMI says its clock
        # is ready; it then asks BasicCommunication.GetSystemTime.
        self.notify("BasicCommunication.OnSystemTimeReady")
        self.event("ready")

    # ---- receiving -------------------------------------------------------------------------

    def received(self, text):
        try:
            message = json.loads(text)
        except ValueError:
            self.log({"dir": "in", "raw": text})
            self.say(f"unreadable message from Core: {text[:200]}")
            return
        self.log({"dir": "in", "msg": message})
        if "method" in message and "id" in message:
            self.event("request", method=message["method"], id=message["id"])
            try:
                self.handle_request(message)
            except WebSocketClosed:
                raise
            except Exception as error:
                self.say(f"error answering {message.get('method')}: {error!r}")
                try:
                    self.respond(message)
                except WebSocketClosed:
                    raise
        elif "method" in message:
            self.event("notification", method=message["method"])
            self.handle_notification(message)
        elif "id" in message:
            with self.lock:
                method, callback = self.pending.pop(message["id"], (None, None))
            if callback:
                try:
                    callback(message)
                except Exception as error:
                    self.say(f"error handling the answer to {method}: {error!r}")

    def app_for(self, params):
        app_id = params.get("appID")
        with self.lock:
            return self.apps.get(app_id)

    def handle_request(self, request):
        method = request["method"]
        params = request.get("params", {}) or {}
        component, _, name = method.partition(".")
        if name == "IsReady":
            available = component not in self.options.unavailable
            return self.respond(request, {"available": available})
        if name in ("GetLanguage",):
            return self.respond(request, {"language": "EN-US"})
        if name == "GetSupportedLanguages":
            return self.respond(request, {"languages": LANGUAGES})
        if method == "UI.GetCapabilities":
            return self.respond(request, ui_capabilities())
        if method == "VR.GetCapabilities":
            return self.respond(request, {"vrCapabilities": ["TEXT"]})
        if method == "TTS.GetCapabilities":
            return self.respond(request, {"speechCapabilities": ["TEXT", "PRE_RECORDED", "SILENCE", "FILE"],
                                          "prerecordedSpeechCapabilities": ["HELP_JINGLE", "INITIAL_JINGLE",
                                                                            "LISTEN_JINGLE", "POSITIVE_JINGLE",
                                                                            "NEGATIVE_JINGLE"]})
        if method == "Buttons.GetCapabilities":
            return self.respond(request, button_capabilities())
        if method == "RC.GetCapabilities":
            return self.respond(request, {})
        if method == "VehicleInfo.GetVehicleType":
            return self.respond(request, {"vehicleType": {"make": "CarWindow", "model": "Test HMI",
                                                          "modelYear": "2024", "trim": "SE"}})
        if method == "BasicCommunication.GetSystemInfo":
            return self.respond(request, {"ccpu_version": self.ccpu_version, "language": "EN-US",
                                          "wersCountryCode": "WAEGB"})
        if method == "BasicCommunication.MixingAudioSupported":
            return self.respond(request, {"attenuatedSupported": True})
        if method == "BasicCommunication.GetSystemTime":
            return self.respond(request, {"systemTime": system_time()})
        if method == "BasicCommunication.ActivateApp":
            app = self.app_for(params)
            level = params.get("level", "FULL")
            if app:
                with self.lock:
                    app.level = level
                self.event("level", appID=params.get("appID"), level=level, by="Core BasicCommunication.ActivateApp")
            return self.respond(request)
        if method == "BasicCommunication.CloseApplication":
            app = self.app_for(params)
            if app:
                with self.lock:
                    app.level = "NONE"
                self.event("level", appID=params.get("appID"), level="NONE", by="Core CloseApplication")
            # Core asks this after refusing a video (or audio) service start: the app goes to NONE.
            self.event("close_application", appID=params.get("appID"))
            return self.respond(request)
        if method == "Navigation.SetVideoConfig":
            config = params.get("config", {})
            width, height = config.get("width"), config.get("height")
            refused = width is not None and height is not None and (int(width), int(height)) in self.refused
            app = self.app_for(params)
            self.event("set_video_config", appID=params.get("appID"), width=width, height=height,
                       size=f"{width}x{height}", protocol=config.get("protocol"), codec=config.get("codec"),
                       accepted=not refused)
            if refused:
                # A result-style answer with a failure code: Core reads rejectedParams from the
                # result's parameters (an error-style answer's "data" does not reach them).
                return self.respond(request, {"rejectedParams": ["width", "height"]}, code="REJECTED")
            if app:
                with self.lock:
                    app.video_config = config
            return self.respond(request)
        if method in ("Navigation.StartStream", "Navigation.StopStream",
                      "Navigation.StartAudioStream", "Navigation.StopAudioStream"):
            app = self.app_for(params)
            kind = {"Navigation.StartStream": "start_stream", "Navigation.StopStream": "stop_stream",
                    "Navigation.StartAudioStream": "start_audio_stream",
                    "Navigation.StopAudioStream": "stop_audio_stream"}[method]
            if app:
                with self.lock:
                    if kind.endswith("audio_stream"):
                        app.audio_streaming = kind.startswith("start")
                    else:
                        app.streaming = kind.startswith("start")
            self.respond(request)
            self.event(kind, appID=params.get("appID"), url=params.get("url"))
            return None
        if method == "UI.SendHapticData":
            rects = params.get("hapticRectData", [])
            app = self.app_for(params)
            if app:
                with self.lock:
                    app.haptic_rects = rects
            self.respond(request)
            self.event("haptic", appID=params.get("appID"), count=len(rects), rects=rects,
                       ids=[r.get("id") for r in rects], result="SUCCESS")
            return None
        if method in ("Buttons.SubscribeButton", "Buttons.UnsubscribeButton"):
            app = self.app_for(params)
            button = params.get("buttonName")
            subscribe = name == "SubscribeButton"
            if app:
                with self.lock:
                    (app.buttons.add if subscribe else app.buttons.discard)(button)
            self.respond(request)
            self.event("subscribe_button" if subscribe else "unsubscribe_button", appID=params.get("appID"),
                       button=button)
            return None
        if method == "BasicCommunication.GetFilePath":
            return self.respond(request, {"filePath": params.get("fileName", "")})
        if method == "VehicleInfo.GetVehicleData":
            return self.respond(request, {})
        if method == "SDL.GetUserFriendlyMessage":
            return self.respond(request, {})
        # Everything else: SUCCESS with no parameters (UI.Show, ChangeRegistration,
        # SetGlobalProperties, CreateWindow, UpdateAppList, UpdateDeviceList, PolicyUpdate...).
        return self.respond(request)

    def handle_notification(self, message):
        method = message["method"]
        params = message.get("params", {}) or {}
        if method == "BasicCommunication.OnAppRegistered":
            app = App(params)
            with self.lock:
                self.apps[app.app_id] = app
            self.event("registered", appID=app.app_id, policyAppID=app.policy_id, name=app.name,
                       appType=app.app_types)
            wanted = self.options.auto_activate == "always" or (
                self.options.auto_activate == "reconnect" and app.policy_id in self.reactivate)
            if wanted and self.targets(app):
                with self.lock:
                    self.reactivate.discard(app.policy_id)
                threading.Thread(target=self.delayed_activate, args=(app.app_id,), daemon=True).start()
        elif method == "BasicCommunication.OnAppUnregistered":
            with self.lock:
                app = self.apps.pop(params.get("appID"), None)
                if app and params.get("unexpectedDisconnect") and app.level == "FULL" and not app.embedded_navi:
                    self.reactivate.add(app.policy_id)
            self.event("unregistered", appID=params.get("appID"),
                       unexpectedDisconnect=params.get("unexpectedDisconnect"),
                       policyAppID=app.policy_id if app else None)
        elif method == "Navigation.OnVideoDataStreaming":
            self.video_data = params.get("available")
            self.event("video_data", available=params.get("available"))
        elif method == "Navigation.OnAudioDataStreaming":
            self.audio_data = params.get("available")
            self.event("audio_data", available=params.get("available"))
        elif method == "BasicCommunication.OnAppCapabilityUpdated":
            capability = params.get("appCapability", {})
            video = capability.get("videoStreamingCapability", {}) or {}
            sizes = []
            for mode in [video] + (video.get("additionalVideoStreamingCapabilities") or []):
                res = mode.get("preferredResolution")
                if res:
                    sizes.append(f"{res.get('resolutionWidth')}x{res.get('resolutionHeight')}")
            self.event("app_capability", appID=params.get("appID"), sizes=sizes)
        elif method == "BasicCommunication.OnSDLClose":
            self.event("sdl_close")
        elif method == "BasicCommunication.OnSystemCapabilityUpdated":
            self.event("system_capability", appID=params.get("appID"),
                       type=(params.get("systemCapability") or {}).get("systemCapabilityType"))

    # ---- acting ----------------------------------------------------------------------------

    def targets(self, app):
        return not self.options.app or app.policy_id == self.options.app

    def current_app(self):
        with self.lock:
            candidates = [a for a in self.apps.values() if self.targets(a)]
            if not candidates:
                return None
            # The newest registration: it is the one the user sees.
            return candidates[-1]

    def delayed_activate(self, app_id):
        time.sleep(self.options.activate_delay)
        with self.lock:
            app = self.apps.get(app_id)
        if app:
            self.say(f"re-activating {app.policy_id} (appID {app_id}), which was in FULL when it was lost")
            self.activate(app)

    def call(self, method, params, timeout=10.0):
        """Sends a request and waits for Core's answer (None when none came)."""
        done = threading.Event()
        box = {}

        def answered(message):
            box["answer"] = message
            done.set()
        self.request(method, params, answered)
        done.wait(timeout)
        return box.get("answer")

    def activate(self, app=None):
        app = app or self.current_app()
        if app is None:
            raise CommandError("no app registered")
        if app.embedded_navi:
            # Ending the event gives the app back its regular level: enough when that is FULL.
            self.set_embedded_navi(app, False)
            if app.level == "FULL":
                self.event("level", appID=app.app_id, level="FULL", by="EMBEDDED_NAVI ended")
                return f"appID {app.app_id} FULL (EMBEDDED_NAVI ended)"
            time.sleep(0.2)
        answer = self.call("SDL.ActivateApp", {"appID": app.app_id})
        result = (answer or {}).get("result") or {}
        if answer is not None and "result" in answer and result.get("isSDLAllowed") is False:
            # External consent: allow SDL on this device, then try again.
            device = result.get("device")
            self.say("Core asks for device consent: sending SDL.OnAllowSDLFunctionality")
            params = {"allowed": True, "source": "GUI"}
            if device:
                params["device"] = device
            self.notify("SDL.OnAllowSDLFunctionality", params)
            time.sleep(0.3)
            answer = self.call("SDL.ActivateApp", {"appID": app.app_id})
            result = (answer or {}).get("result") or {}
        if answer is None or "error" in answer or result.get("code", 0) != 0:
            self.event("activate_failed", appID=app.app_id, answer=answer)
            raise CommandError(f"SDL.ActivateApp failed: {json.dumps(answer)}")
        with self.lock:
            app.level = "FULL"
        self.event("activated", appID=app.app_id)
        self.event("level", appID=app.app_id, level="FULL", by="SDL.ActivateApp")
        return f"appID {app.app_id} FULL"

    def set_embedded_navi(self, app, active):
        self.notify("BasicCommunication.OnEventChanged", {"eventName": "EMBEDDED_NAVI", "isActive": active})
        with self.lock:
            app.embedded_navi = active

    def set_level(self, level):
        level = level.upper()
        app = self.current_app()
        if app is None:
            raise CommandError("no app registered")
        if level == "FULL":
            return self.activate(app)
        if level == "LIMITED":
            if app.embedded_navi:
                self.set_embedded_navi(app, False)
                time.sleep(0.2)
            if app.level != "FULL":
                self.activate(app)
                time.sleep(0.3)
            self.notify("BasicCommunication.OnAppDeactivated", {"appID": app.app_id})
            with self.lock:
                app.level = "LIMITED"
        elif level == "BACKGROUND":
            if app.level == "NONE":
                self.activate(app)
                time.sleep(0.3)
            if not app.embedded_navi:
                # The navigation app goes to BACKGROUND, NOT_STREAMABLE, while the head unit's
                # own navigation shows (Core's EmbeddedNavi state); ended by `level FULL/LIMITED`.
                self.set_embedded_navi(app, True)
        elif level == "NONE":
            self.notify("BasicCommunication.OnExitApplication", {"appID": app.app_id, "reason": "USER_EXIT"})
            with self.lock:
                app.level = "NONE"
            if app.embedded_navi:
                # Ended after the exit, so that the app does not pass through FULL/LIMITED.
                time.sleep(0.2)
                self.set_embedded_navi(app, False)
        else:
            raise CommandError(f"level is NONE, BACKGROUND, LIMITED or FULL; got {level}")
        self.event("level", appID=app.app_id, level=app.effective_level(), by=f"level {level}")
        return f"appID {app.app_id} {app.effective_level()}"

    def touch(self, points, moves=0):
        """A touch from points[0] to points[-1] (one point: a tap)."""
        app = self.current_app()
        start = points[0]
        end = points[-1]
        path = [start]
        for i in range(1, moves + 1):
            f = i / (moves + 1)
            path.append((round(start[0] + (end[0] - start[0]) * f), round(start[1] + (end[1] - start[1]) * f)))
        if end != start or moves:
            path.append(end)

        def ts():
            return int((time.monotonic() - self.started) * 1000) % 2_000_000_000

        def event(kind, point):
            x, y = int(round(point[0])), int(round(point[1]))
            self.notify("UI.OnTouchEvent", {"type": kind, "event": [{"id": 0, "ts": [ts()], "c": [{"x": x, "y": y}]}]})
        event("BEGIN", path[0])
        for point in path[1:]:
            time.sleep(0.05)
            event("MOVE", point)
        time.sleep(0.1)
        event("END", path[-1])
        self.event("touch", appID=app.app_id if app else None, x=int(round(start[0])), y=int(round(start[1])),
                   toX=int(round(end[0])), toY=int(round(end[1])))
        return f"touched {int(round(start[0]))},{int(round(start[1]))}" + (
            f" -> {int(round(end[0]))},{int(round(end[1]))}" if end != start else "")

    def touch_haptic(self, rect_id=None):
        app = self.current_app()
        if app is None or not app.haptic_rects:
            raise CommandError("no haptic rectangles received")
        rects = app.haptic_rects
        chosen = rects[0]
        if rect_id is not None:
            matching = [r for r in rects if str(r.get("id")) == str(rect_id)]
            if not matching:
                raise CommandError(f"no haptic rectangle {rect_id}; ids {[r.get('id') for r in rects]}")
            chosen = matching[0]
        rect = chosen["rect"]
        x = rect["x"] + rect["width"] / 2
        y = rect["y"] + rect["height"] / 2
        self.touch([(x, y)])
        return f"touched haptic rectangle {chosen.get('id')} at {int(round(x))},{int(round(y))} ({json.dumps(rect)})"

    def button(self, name, mode="SHORT"):
        app = self.current_app()
        params = {"name": name}
        if app:
            params["appID"] = app.app_id
        self.notify("Buttons.OnButtonEvent", dict(params, mode="BUTTONDOWN"))
        time.sleep(0.3 if mode == "SHORT" else 1.2)
        self.notify("Buttons.OnButtonEvent", dict(params, mode="BUTTONUP"))
        self.notify("Buttons.OnButtonPress", dict(params, mode=mode))
        subscribed = app is not None and name in app.buttons
        self.event("button", appID=params.get("appID"), button=name, mode=mode, subscribed=subscribed)
        return f"pressed {name} ({mode}); the app {'is' if subscribed else 'is NOT'} subscribed to it"

    def resize(self, width, height, scale=None):
        app = self.current_app()
        if app is None:
            raise CommandError("no app registered")
        capability = video_capability(width, height, scale, additional=False)
        self.notify("BasicCommunication.OnSystemCapabilityUpdated", {
            "systemCapability": {"systemCapabilityType": "VIDEO_STREAMING",
                                 "videoStreamingCapability": capability},
            "appID": app.app_id})
        self.event("resize", appID=app.app_id, width=width, height=height, scale=scale or 1)
        return f"sent VIDEO_STREAMING capability {width}x{height} scale {scale or 1}"

    def status(self):
        with self.lock:
            return {"connected": self.connected, "seq": self.seq, "apps": [a.summary() for a in self.apps.values()],
                    "videoData": self.video_data, "audioData": self.audio_data,
                    "refused": sorted(f"{w}x{h}" for w, h in self.refused),
                    "files": {k: w.summary() for k, w in self.watchers.items()},
                    "reactivate": sorted(p for p in self.reactivate if p)}

    # ---- commands --------------------------------------------------------------------------

    def command(self, line):
        """Runs one command; returns the answer text (raises CommandError)."""
        words = shlex.split(line)
        if not words:
            return ""
        verb, args = words[0].lower(), words[1:]
        if verb == "activate":
            return self.activate()
        if verb == "level":
            need(args, 1, "level NONE|BACKGROUND|LIMITED|FULL")
            return self.set_level(args[0])
        if verb == "touch":
            need(args, 2, "touch X Y")
            return self.touch([(float(args[0]), float(args[1]))])
        if verb == "drag":
            need(args, 4, "drag X1 Y1 X2 Y2")
            return self.touch([(float(args[0]), float(args[1])), (float(args[2]), float(args[3]))], moves=5)
        if verb == "touch-haptic":
            return self.touch_haptic(args[0] if args else None)
        if verb == "button":
            need(args, 1, "button NAME [SHORT|LONG]")
            return self.button(args[0].upper(), args[1].upper() if len(args) > 1 else "SHORT")
        if verb == "resize":
            need(args, 2, "resize W H [SCALE]")
            return self.resize(int(args[0]), int(args[1]), float(args[2]) if len(args) > 2 else None)
        if verb == "refuse":
            need(args, 1, "refuse WxH [WxH...] | refuse none")
            with self.lock:
                if args[0].lower() == "none":
                    self.refused = set()
                else:
                    self.refused |= set(parse_size(a) for a in args)
                refused = sorted(f"{w}x{h}" for w, h in self.refused)
            self.event("refuse", sizes=refused)
            return "refusing " + (", ".join(refused) or "nothing")
        if verb == "sleep":
            need(args, 1, "sleep SECONDS")
            self.stopping.wait(float(args[0]))
            return f"slept {args[0]} s"
        if verb == "mark":
            with self.lock:
                return str(self.seq)
        if verb == "wait":
            need(args, 1, "wait KIND [TIMEOUT] [since=N] [key=value ...]")
            kind, timeout, since, filters = args[0], 30.0, None, []
            for arg in args[1:]:
                if arg.startswith("since="):
                    since = int(arg[6:])
                elif "!=" in arg:
                    key, value = arg.split("!=", 1)
                    filters.append((key, True, value))
                elif "=" in arg:
                    key, value = arg.split("=", 1)
                    filters.append((key, False, value))
                else:
                    timeout = float(arg)
            if since is None:
                with self.lock:
                    since = self.seq
            record = self.wait_for(kind, timeout, since, filters)
            if record is None:
                raise CommandTimeout(f"no {kind} event within {timeout:g} s")
            return json.dumps(record, separators=(",", ":"))
        if verb == "events":
            since, kind = 0, None
            for arg in args:
                if arg.startswith("since="):
                    since = int(arg[6:])
                else:
                    kind = arg
            with self.lock:
                records = [r for r in self.events if r["seq"] > since and (kind is None or r["kind"] == kind)]
            return "\n".join(json.dumps(r, separators=(",", ":")) for r in records)
        if verb == "status":
            return json.dumps(self.status(), separators=(",", ":"))
        if verb == "quit":
            self.stopping.set()
            return "bye"
        raise CommandError(f"unknown command {verb!r}")

    # ---- control channel -------------------------------------------------------------------

    def control_server(self, path):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(8)
        server.settimeout(0.5)
        self.say(f"control channel: {path}")
        while not self.stopping.is_set():
            try:
                connection, _ = server.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            threading.Thread(target=self.control_client, args=(connection,), daemon=True).start()
        server.close()
        try:
            os.unlink(path)
        except OSError:
            pass

    def control_client(self, connection):
        with connection:
            reader = connection.makefile("r", encoding="utf-8")
            writer = connection.makefile("w", encoding="utf-8")
            for line in reader:
                line = line.strip()
                if not line:
                    continue
                self.log({"control": line})
                status, text = self.run_command(line)
                try:
                    if text:
                        writer.write(text + "\n")
                    writer.write(f"{status}\n")
                    writer.flush()
                except OSError:
                    return

    def run_command(self, line):
        try:
            text = self.command(line)
            return "ok", text
        except CommandTimeout as error:
            return "timeout", str(error)
        except (CommandError, ValueError) as error:
            return "error", str(error)
        except WebSocketClosed as error:
            return "error", f"not connected to Core: {error}"

    # ---- scenario --------------------------------------------------------------------------

    def run_scenario(self, steps):
        for step in steps:
            if self.stopping.is_set():
                return
            step = step.strip()
            if not step or step.startswith("#"):
                continue
            self.say(f"scenario: {step}")
            status, text = self.run_command(step)
            self.log({"scenario": step, "status": status, "answer": text})
            if status != "ok":
                self.say(f"scenario step {step!r}: {status}: {text}")
                if self.options.strict:
                    self.say("stopping the scenario (--strict)")
                    break
        self.say("scenario finished")
        if self.options.exit_after_scenario:
            self.stopping.set()

    def run(self):
        for watcher in self.watchers.values():
            watcher.start()
        threading.Thread(target=self.connection_loop, daemon=True, name="core").start()
        control = None
        if self.options.control:
            control = threading.Thread(target=self.control_server, args=(self.options.control,), daemon=True,
                                       name="control")
            control.start()
        if not self.options.no_scenario:
            steps = []
            if self.options.scenario_file:
                with open(self.options.scenario_file) as f:
                    steps += f.read().splitlines()
            steps += self.options.step or []
            if not steps:
                steps = DEFAULT_SCENARIO
            threading.Thread(target=self.run_scenario, args=(steps,), daemon=True, name="scenario").start()
        try:
            while not self.stopping.is_set():
                self.stopping.wait(0.5)
        except KeyboardInterrupt:
            self.stopping.set()
        ws = self.ws
        if ws:
            ws.close()
        if control:
            control.join(2)   # it removes the socket file
        self.say("stopped")


class CommandError(Exception):
    pass


class CommandTimeout(CommandError):
    pass


def need(args, count, usage):
    if len(args) < count:
        raise CommandError(f"usage: {usage}")


DEFAULT_SCENARIO = [
    "wait registered 120",
    "activate",
    "wait start_stream 30",
    "sleep 3",
    "touch 400 240",
    "sleep 1",
    "touch-haptic",
    "sleep 1",
    "button NAV_ZOOM_IN",
    "sleep 2",
    "level LIMITED",
    "sleep 4",
    "level BACKGROUND",
    "sleep 4",
    "level NONE",
    "sleep 4",
    "level FULL",
    "wait start_stream 20",
    "sleep 4",
    "resize 480 320",
    "wait set_video_config 20 size=480x320",
    "sleep 5",
]


def control_main(argv):
    parser = argparse.ArgumentParser(prog="hmi.py ctl", description="Send commands to a running hmi.py.")
    parser.add_argument("--control", default=os.environ.get("HMI_CONTROL", default_control_path()))
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds to wait for the answer (default: the wait's timeout + 10, else 60)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    line = " ".join(shlex.quote(w) for w in options.command) if len(options.command) > 1 else " ".join(options.command)
    if not line.strip():
        parser.error("give a command")
    timeout = options.timeout
    if timeout is None:
        timeout = 60.0
        words = shlex.split(line)
        if words and words[0] == "wait":
            for w in words[2:]:
                try:
                    timeout = float(w) + 10
                except ValueError:
                    pass
        if words and words[0] == "sleep" and len(words) > 1:
            timeout = float(words[1]) + 10
    try:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(timeout)
        connection.connect(options.control)
    except OSError as error:
        print(f"error: cannot reach the HMI at {options.control}: {error}")
        return 3
    with connection:
        connection.sendall((line + "\n").encode())
        data = b""
        try:
            while True:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                data += chunk
                lines = data.decode("utf-8", "replace").rstrip("\n").split("\n")
                if data.endswith(b"\n") and lines[-1] in ("ok", "error", "timeout"):
                    break
        except socket.timeout:
            print("error: no answer from the HMI in time")
            return 3
    lines = data.decode("utf-8", "replace").rstrip("\n").split("\n")
    status = lines[-1] if lines else "error"
    body = "\n".join(lines[:-1])
    if body:
        print(body)
    return {"ok": 0, "timeout": 1}.get(status, 2)


def default_control_path():
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return os.path.join(base, f"carwindow-hmi-{os.getuid()}.sock")


def main(argv):
    if argv and argv[0] == "ctl":
        return control_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("HMI_URL", "ws://127.0.0.1:8087"),
                        help="Core's HMI WebSocket (default ws://127.0.0.1:8087)")
    parser.add_argument("--log", default=os.environ.get("HMI_LOG", "hmi-log.jsonl"),
                        help="JSON-lines log of every message in and out and every event ('' for none)")
    parser.add_argument("--control", default=os.environ.get("HMI_CONTROL", default_control_path()),
                        help="UNIX socket for commands ('' for none)")
    parser.add_argument("--no-touch", action="store_true",
                        help="a screen without touch and without haptic data (the app then draws its own focus)")
    parser.add_argument("--refuse", action="append", default=[], metavar="WxH",
                        help="answer Navigation.SetVideoConfig for this size REJECTED (width, height)")
    parser.add_argument("--app", default=None, help="act on the app with this policy app id only")
    parser.add_argument("--auto-activate", choices=["never", "reconnect", "always"], default="reconnect",
                        help="activate an app when it registers: never, only when it was in FULL when "
                             "lost (Core restart, unexpected disconnect; default), or always")
    parser.add_argument("--activate-delay", type=float, default=0.5,
                        help="seconds between an app's registration and its automatic activation")
    parser.add_argument("--unavailable", action="append", default=[], metavar="COMPONENT",
                        help="answer IsReady available=false for this component (e.g. VR)")
    parser.add_argument("--ccpu-version", default=None,
                        help="ccpu_version in GetSystemInfo (default: new per HMI process, so that Core "
                             "drops its capability cache and asks this HMI again)")
    parser.add_argument("--video-file", default=os.environ.get("HMI_VIDEO_FILE"),
                        help="Core's video consumer file, watched for video_file_flow/_idle events")
    parser.add_argument("--audio-file", default=os.environ.get("HMI_AUDIO_FILE"),
                        help="Core's audio consumer file, watched for audio_file_flow/_idle events")
    parser.add_argument("--scenario-file", help="scenario steps, one command a line")
    parser.add_argument("--step", action="append", help="a scenario step (repeatable; replaces the default)")
    parser.add_argument("--no-scenario", action="store_true", help="run no scenario: act on commands only")
    parser.add_argument("--strict", action="store_true", help="stop the scenario at the first failed step")
    parser.add_argument("--exit-after-scenario", action="store_true")
    parser.add_argument("--retry-interval", type=float, default=0.5, help="seconds between connection attempts")
    parser.add_argument("--quiet", action="store_true", help="print nothing on standard error")
    options = parser.parse_args(argv)
    options.unavailable = set(options.unavailable)
    global TOUCHLESS
    TOUCHLESS = options.no_touch
    for size in options.refuse:
        parse_size(size)
    hmi = HMI(options)
    import signal
    signal.signal(signal.SIGTERM, lambda *_: hmi.stopping.set())
    hmi.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
