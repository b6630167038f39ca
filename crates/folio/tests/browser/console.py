"""The console in headless Chromium (run by crates/folio/tests/console_browser.rs).

Signs in, watches the dashboard's transaction chart move while
`folio load commit` runs against the server, lists the databases, and
opens a document whose Subject is an HTML injection, which must show as
text: no <img> in the page, no alert, no Content-Security-Policy report.
Screenshots go to the directory given.

usage: console.py URL PASSWORD SCREENSHOT_DIR FOLIO_BINARY NATIVE_ADDR
"""
import os
import re
import subprocess
import sys
import tempfile
import time

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By

from consolelib import DURATION, Console, moment

XSS = "<img src=x onerror=alert(1)>"

url, password, shots, folio, native = sys.argv[1:6]
c = Console(url, shots)
driver, wait, shot = c.driver, c.wait, c.shot


def legend(title):
    """The legend text of the chart card titled `title`."""
    for card in driver.find_elements(By.CSS_SELECTOR, ".card"):
        if card.find_element(By.TAG_NAME, "h3").text.startswith(title):
            return card.find_element(By.CSS_SELECTOR, ".legend").text
    raise AssertionError("no chart " + title)


def trans_per_min():
    text = legend("Transactions")
    value = text.split("transactions/min:")[1].split()[0].replace(",", "")
    return float(value) if value != "–" else 0.0


try:
    driver.get(url + "/_console/")
    wait.until(lambda d: d.find_elements(By.ID, "signin"))
    shot("signin.png")
    driver.find_element(By.ID, "user").send_keys("admin")
    driver.find_element(By.ID, "password").send_keys(password)
    driver.find_element(By.ID, "signin-button").click()
    wait.until(lambda d: d.find_element(By.ID, "dash-status").text.startswith("Updated"))
    before = trans_per_min()

    out = tempfile.mkdtemp()
    env = dict(os.environ, FOLIO_PASSWORD=password)
    load = subprocess.Popen(
        [folio, "load", "commit", "--server", native, "--user", "admin", "--no-embedded",
         "--clients", "8", "--seconds", "6", "--rounds", "1", "--out", out],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    moved = 0.0
    deadline = time.time() + 25
    while time.time() < deadline and load.poll() is None:
        time.sleep(1)
        moved = max(moved, trans_per_min())
        if moved > 1000:
            break
    time.sleep(3)
    moved = max(moved, trans_per_min())
    print("transactions/min before %.0f, during the load %.0f" % (before, moved))
    assert moved > max(before, 100), "the transactions chart did not move: %r" % legend("Transactions")
    driver.set_window_size(1400, 2200)
    time.sleep(2.5)
    shot("dashboard.png")
    # Every figure in a unit read at a glance: the checkpoint's age (often
    # a fraction of a millisecond), response times, the log's share used
    # (a tiny percentage on a young server), no exponent anywhere.
    c.no_exponents()
    age = legend("Checkpoint age")
    assert re.search(r"age: (%s)" % DURATION, age), age
    response = legend("Response time")
    # (– when the chosen operation had no request in the last second)
    assert re.search(r"p50: (%s|–)" % DURATION, response), response
    used = legend("Log space used")
    assert re.search(r"used: (< 0\.01|\d[\d,]*(\.\d+)?)%", used), used
    status = driver.find_element(By.ID, "dash-status").text
    moment(status[len("Updated "):])
    driver.set_window_size(1400, 1100)
    load.wait(timeout=60)

    driver.get(url + "/_console/#/databases")
    wait.until(lambda d: "…" not in d.find_element(By.ID, "databases").text
               and "xss.fdb" in d.find_element(By.ID, "databases").text)
    shot("databases.png")

    driver.find_element(By.LINK_TEXT, "xss.fdb").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#documents tbody a"))
    assert XSS in driver.find_element(By.ID, "documents").text
    shot("database.png")
    driver.find_element(By.CSS_SELECTOR, "#documents tbody a").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#items td.value"))
    values = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#items td.value")]
    assert XSS in values, values
    assert not driver.find_elements(By.CSS_SELECTOR, "main img"), "the Subject became an <img>"
    c.no_alert()
    # The document's times: local moments with their age, the stored
    # value on hover.
    system = dict(zip([e.text for e in driver.find_elements(By.CSS_SELECTOR, "#system dt")],
                      driver.find_elements(By.CSS_SELECTOR, "#system dd")))
    for name in ["$created", "$modified"]:
        _, age = moment(system[name].text)
        assert age, system[name].text
        assert system[name].get_attribute("title").endswith("Z"), system[name].get_attribute("title")
    c.no_exponents()
    shot("document.png")

    reports = c.console_problems()
    assert not reports, reports
    print("console browser test passed")
except TimeoutException:
    shot("failure.png")
    print(driver.find_element(By.TAG_NAME, "body").text, file=sys.stderr)
    raise
finally:
    driver.quit()
