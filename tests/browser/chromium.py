"""Headless Chromium for the page checks (check_report.py, check_head_view.py): one way to start it, one tally.

Debian packages chromium, chromium-driver, python3-selenium; CHROMIUM and CHROMEDRIVER override their paths.
Chromium refuses to run as root without --no-sandbox: the flag is passed then."""
import os
import sys

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
except ImportError as e:
    print(f"epar: error: cannot import selenium: {e}", file=sys.stderr)
    print("hint: apt-get install python3-selenium chromium chromium-driver (scripts/install-deps --with-browser)",
          file=sys.stderr)
    sys.exit(3)


def start_browser(logs=False):
    """A headless Chromium; logs: keep the browser console and the network log (goog:loggingPrefs)."""
    opts = webdriver.ChromeOptions()
    opts.add_argument("--headless=new")
    if os.geteuid() == 0:
        opts.add_argument("--no-sandbox")  # Chromium's sandbox does not run as root
    opts.add_argument("--disable-gpu")
    opts.add_argument("--disable-dev-shm-usage")
    opts.add_argument("--hide-scrollbars")
    if logs:
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    opts.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=opts)


class Tally:
    """check(cond, what): counts, and prints "not ok <name>: <what>" for a failure."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"not ok {self.name}: {what}")
