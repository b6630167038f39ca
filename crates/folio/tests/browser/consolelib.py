"""What the console's browser tests share: headless Chromium through
Selenium, screenshots, signing in, waiting for text, and plain HTTP calls
to the same server (to change a document behind the page's back, or to
check what the page did)."""
import base64
import datetime
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


# A number written as an exponent, as JavaScript prints a tiny or huge
# one (1.29e-4, 1e+21), standing alone in the text.
EXPONENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[-+]\d+(?![\w.])")

# A figure with the unit of a duration the console shows.
DURATION = r"\d[\d,]*(?:\.\d+)? (?:µs|ms|s|min)|< 1 µs|\d+ h \d+ min|\d+ d \d+ h"


def moment(text):
    """The moment the console writes as `2026-11-29 02:49:36 (3 min ago)`
    at the start of `text`: (datetime, age text); fails unless it parses."""
    m = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?: \((just now|.* ago|in .*)\))?", text)
    assert m, "not a date the console writes: %r" % text
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"), m.group(2)


class Console:
    def __init__(self, url, shots, downloads=None):
        self.url = url
        self.shots = shots
        os.makedirs(shots, exist_ok=True)
        opts = webdriver.ChromeOptions()
        opts.binary_location = "/usr/bin/chromium"
        for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1100",
                  "--disable-dev-shm-usage"]:
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        if downloads:
            opts.add_experimental_option("prefs", {
                "download.default_directory": downloads,
                "download.prompt_for_download": False,
            })
        self.driver = webdriver.Chrome(options=opts,
                                       service=Service(executable_path="/usr/bin/chromedriver"))
        if downloads:
            self.driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                                        {"behavior": "allow", "downloadPath": downloads})
        self.wait = WebDriverWait(self.driver, 20)

    def quit(self):
        self.driver.quit()

    def shot(self, name, height=None):
        """A screenshot of the page; `height` grows the window to fit first."""
        if height:
            self.driver.set_window_size(1400, height)
            time.sleep(0.3)
        path = os.path.join(self.shots, name)
        self.driver.save_screenshot(path)
        if height:
            self.driver.set_window_size(1400, 1100)
        print("screenshot", path)

    def open(self, hash_):
        self.driver.get(self.url + "/_console/" + hash_)

    def sign_in(self, user, password):
        self.open("")
        self.wait.until(lambda d: d.find_elements(By.ID, "signin"))
        self.find("user").send_keys(user)
        self.find("password").send_keys(password)
        self.find("signin-button").click()
        self.wait.until(lambda d: d.find_element(By.ID, "who").text.startswith(user))

    def find(self, id_):
        """The element `id_`, waiting for the page to draw it."""
        try:
            return self.wait.until(lambda d: d.find_element(By.ID, id_))
        except Exception:
            print("waiting for #%s; the page says:\n%s" % (id_, self.main_text()), file=sys.stderr)
            raise

    def css(self, selector):
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def main_text(self):
        return self.driver.find_element(By.ID, "main").text

    def until_text(self, needle, id_="main"):
        """Waits for `needle` in the element `id_`; returns its text."""
        try:
            self.wait.until(lambda d: d.find_elements(By.ID, id_)
                            and needle in d.find_element(By.ID, id_).text)
        except Exception:
            print("waiting for %r in #%s; the page says:\n%s" % (needle, id_, self.main_text()),
                  file=sys.stderr)
            raise
        return self.driver.find_element(By.ID, id_).text

    def no_exponents(self):
        """Fails if the page shows a figure as an exponent (1.29e-4)."""
        text = self.main_text()
        found = EXPONENT.findall(text)
        assert not found, "figures shown as exponents %r in:\n%s" % (found, text)

    def no_alert(self):
        try:
            text = self.driver.switch_to.alert.text
        except NoAlertPresentException:
            return
        raise AssertionError("an alert opened: %r" % text)

    def fetch(self, method, path, body=None):
        """A request from the page's own script (what a person could type in
        the browser's console), with the session's CSRF token: [status, text]."""
        return self.driver.execute_async_script("""
            const [method, path, body, done] = arguments;
            fetch('/_session', {headers: {'X-Folio-Console': '1'}})
              .then((r) => r.json())
              .then((s) => fetch(path, {method, body, headers: {'X-Folio-CSRF': s.csrf,
                                                                'X-Folio-Console': '1'}}))
              .then(async (r) => done([r.status, await r.text()]))
              .catch((e) => done([0, String(e)]));
        """, method, path, body)

    def console_problems(self):
        """Content-Security-Policy reports and other severe messages,
        expected refusals (4xx answers the page shows) left out."""
        return [e["message"] for e in self.driver.get_log("browser")
                if "Content Security Policy" in e["message"]
                or (e["level"] == "SEVERE" and "favicon" not in e["message"]
                    and not any(" %d " % c in e["message"] or "(%d)" % c in e["message"]
                                for c in (400, 401, 403, 404, 409)))]


class Http:
    """Plain HTTP to the server, as a user with Basic authentication."""

    def __init__(self, url, user, password=None):
        """As `user` with `password`, or (no password) with the API token `user`."""
        self.url = url
        if password is None:
            self.auth = "Bearer " + user
        else:
            self.auth = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()

    def call(self, method, path, body=None, auth=True):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if auth:
            req.add_header("Authorization", self.auth)
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def ok(self, method, path, body=None):
        status, answer = self.call(method, path, body)
        assert 200 <= status < 300, "%s %s: %s %s" % (method, path, status, answer)
        return answer
