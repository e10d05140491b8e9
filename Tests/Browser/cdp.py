"""A small Chrome DevTools Protocol client over --remote-debugging-pipe (no WebSocket library,
no download): Chromium's headless shell reads JSON messages ending in NUL on fd 3 and writes
them on fd 4. Python's standard library only."""

import base64
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time


class CDPError(Exception):
    pass


class Browser:
    """A headless Chromium with one page. Records what a test checks afterwards: console errors,
    uncaught exceptions, Content-Security-Policy reports and every URL the page asked for."""

    def __init__(self, binary=None, width=1280, height=900):
        binary = binary or shutil.which("chromium-headless-shell") or shutil.which("chromium")
        if not binary:
            raise CDPError("no chromium-headless-shell (apt-get install chromium-headless-shell)")
        self.profile = tempfile.mkdtemp(prefix="swarmdeck-browser-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds():
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        args = [binary, "--remote-debugging-pipe", f"--user-data-dir={self.profile}", "--no-first-run",
                "--disable-gpu", "--disable-extensions", "--disable-background-networking",
                "--disable-dev-shm-usage", f"--window-size={width},{height}", "--lang=en-US", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        self.log_path = os.path.join(self.profile, "chromium.log")
        self.process = subprocess.Popen(args, preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next = 0
        self._lock = threading.Lock()
        self._waiting = {}
        self.events = queue.Queue()
        self.console_errors = []
        self.exceptions = []
        self.security = []
        self.urls = []
        self.websockets = []
        self._websocket_urls = {}
        self.handshakes = []  # (url, response headers lower-cased) of each WebSocket handshake
        self.dialogs = []
        threading.Thread(target=self._read, daemon=True).start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.page(f"{domain}.enable")
        self.page("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def _read(self):
        buffer = b""
        while True:
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    waiter = self._waiting.pop(message["id"], None)
                    if waiter:
                        waiter.put(message)
                else:
                    self._event(message)

    def _event(self, message):
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.exceptions.append(details.get("exception", {}).get("description") or details.get("text"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            if entry.get("level") == "error":
                text = entry.get("text", "")
                (self.security if "Content Security Policy" in text or entry.get("source") == "security" else self.console_errors).append(text)
        elif method == "Network.requestWillBeSent":
            self.urls.append(params.get("request", {}).get("url", ""))
        elif method == "Network.webSocketCreated":
            self.websockets.append(params.get("url", ""))
            self._websocket_urls[params.get("requestId")] = params.get("url", "")
            self.urls.append(params.get("url", ""))
        elif method == "Network.webSocketHandshakeResponseReceived":
            response = params.get("response", {})
            headers = {k.lower(): v for k, v in response.get("headers", {}).items()}
            headers[":status"] = str(response.get("status", ""))
            self.handshakes.append((self._websocket_urls.get(params.get("requestId"), ""), headers))
        elif method == "Page.javascriptDialogOpening":
            self.dialogs.append(params.get("message"))
        elif method == "Fetch.requestPaused":
            # A request to a blocked address (block()): it fails as if the network were down.
            # Sent without waiting for the answer: this is the thread that reads answers.
            self._send("Fetch.failRequest", {"requestId": params["requestId"], "errorReason": "InternetDisconnected"},
                       message.get("sessionId"))
        self.events.put(message)

    def _send(self, method, params, session, waiter=None):
        with self._lock:
            self._next += 1
            ident = self._next
            if waiter is not None:
                self._waiting[ident] = waiter
            message = {"id": ident, "method": method, "params": params or {}}
            if session:
                message["sessionId"] = session
            os.write(self._to_chrome, json.dumps(message).encode() + b"\0")

    def block(self, url_pattern):
        """Requests whose URL matches `url_pattern` (CDP wildcards) fail as if offline."""
        self.page("Fetch.enable", {"patterns": [{"urlPattern": url_pattern}]})

    def unblock(self):
        self.page("Fetch.disable")

    def call(self, method, params=None, session=None, timeout=30):
        waiter = queue.Queue()
        self._send(method, params, session, waiter)
        try:
            answer = waiter.get(timeout=timeout)
        except queue.Empty:
            raise CDPError(f"{method}: no answer in {timeout} s") from None
        if "error" in answer:
            raise CDPError(f"{method}: {answer['error'].get('message')}")
        return answer.get("result", {})

    def page(self, method, params=None, timeout=30):
        return self.call(method, params, session=self.session, timeout=timeout)

    def evaluate(self, expression, timeout=30):
        """The value of a JavaScript expression in the page (promises are awaited)."""
        result = self.page("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}, timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise CDPError(f"{expression[:80]}: {details.get('exception', {}).get('description') or details.get('text')}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression, timeout=30, what=None):
        """Polls `expression` until it is truthy (an element counts)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.evaluate(f"!!({expression})")
            except CDPError as error:
                last = str(error)
            else:
                if last:
                    return True
            time.sleep(0.2)
        raise AssertionError(f"waited {timeout} s for {what or expression} (last: {last!r})")

    def goto(self, url):
        self.page("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'", what=f"{url} to load")

    def click(self, selector):
        self.wait_for(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); return e && !e.disabled; }})()", what=f"{selector} to be enabled")
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")

    def fill(self, selector, text):
        """Focuses a field, clears it and types `text` as keyboard input would insert it."""
        self.wait_for(f"!!document.querySelector({json.dumps(selector)})", what=selector)
        self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.focus(); e.select?.(); }})()")
        self.page("Input.insertText", {"text": text})

    def key(self, key, code=None, key_code=None, shift=False):
        params = {"key": key, "code": code or key, "windowsVirtualKeyCode": key_code or 0, "modifiers": 8 if shift else 0}
        self.page("Input.dispatchKeyEvent", {"type": "keyDown", **params})
        self.page("Input.dispatchKeyEvent", {"type": "keyUp", **params})

    def tab(self, shift=False):
        self.key("Tab", "Tab", 9, shift)

    def screenshot(self, path):
        data = self.page("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False})["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except CDPError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)
