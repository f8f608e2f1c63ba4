#!/usr/bin/python3
"""Loads a head_view.html written by `epar inspect` in headless Chromium (selenium + chromedriver) and checks what a
reader meets:

  - the page loads without a JavaScript error and without any request to the network;
  - it draws lines, and every layer and head the selectors offer changes the view (the set of lines differs);
  - hovering a query token shows its row only (i + 1 lines) and names it; clicking a key token pins its column
    (T - j lines), which stays when the pointer leaves; clicking again unpins it;
  - no horizontal page overflow at 420 px nor at 1400 px;
  - screenshots at 1400 and 420 px wide (a query row pinned) go to SHOTS/ for a person to look at.

Usage: tests/browser/check_head_view.py HEAD_VIEW.html SHOTS
Prints "not ok ..." per failed check and ends with "# test_head_view: N passed, M failed"; exit 1 on a failure,
3 when the browser cannot start.
"""
import os
import sys

from chromium import Tally, start_browser   # first: it reports a missing selenium (exit 3)
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select


T = Tally("test_head_view")
check = T.check

# installed before any script of the page runs: every error and every request that is not a file
CATCH = """window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
window.addEventListener('unhandledrejection', function (e) { window.__errors.push(String(e.reason)); });"""


def set_width(drv, width, height=1000):
    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def view(drv):
    """what the lines show: the view key and every line's end points and opacity"""
    return drv.execute_script(
        "var s=document.getElementById('lines');return [s.dataset.view, Array.from(s.querySelectorAll('line'))"
        ".map(function(l){return l.getAttribute('y1')+'-'+l.getAttribute('y2')+':'+l.getAttribute('stroke-opacity');})"
        ".join(' ')];")


def n_lines(drv):
    return drv.execute_script("return document.querySelectorAll('#lines line').length;")


def check_controls(drv):
    seen = {}
    layer, head = Select(drv.find_element(By.ID, "layer")), Select(drv.find_element(By.ID, "head"))
    for lv in [o.get_attribute("value") for o in layer.options]:
        layer.select_by_value(lv)
        for hv in [o.get_attribute("value") for o in head.options]:
            head.select_by_value(hv)
            key, lines = view(drv)
            check(key.startswith(f"{lv}:{hv}:"), f"layer {lv} head {hv}: the view says {key}")
            check(lines, f"layer {lv} head {hv}: no lines drawn")
            seen[(lv, hv)] = lines
    check(len(seen) >= 2, f"the selectors offer {len(seen)} views")
    check(len(set(seen.values())) == len(seen),
          f"{len(seen) - len(set(seen.values()))} of {len(seen)} layer/head choices draw the same lines as another")
    layer.select_by_index(0)
    head.select_by_index(0)
    drv.execute_script("document.activeElement.blur();")   # a select left focused swallows the next click


def centre(drv, el):
    """scroll el to the middle of the window (selenium's own scrolling can leave it under the sticky controls)"""
    drv.execute_script("arguments[0].scrollIntoView({block: 'center'});", el)
    return el


def check_tokens(drv):
    left = drv.find_elements(By.CSS_SELECTOR, "#left .tok")
    right = drv.find_elements(By.CSS_SELECTOR, "#right .tok")
    T = len(left)
    check(T > 2 and len(right) == T, f"{T} query and {len(right)} key tokens")
    i = T // 2
    ActionChains(drv).move_to_element(centre(drv, left[i])).perform()
    info = drv.find_element(By.ID, "info").text
    check(f"query {i} " in info, f"hovering query {i}: the row is not named: '{info}'")
    check(n_lines(drv) == i + 1, f"hovering query {i}: {n_lines(drv)} lines, want {i + 1}")
    j = 1
    centre(drv, right[j]).click()
    ActionChains(drv).move_to_element(drv.find_element(By.TAG_NAME, "h1")).perform()
    info = drv.find_element(By.ID, "info").text
    check("(pinned)" in info and f"key {j} " in info, f"clicking key {j}: not pinned: '{info}'")
    check(n_lines(drv) == T - j, f"key {j} pinned: {n_lines(drv)} lines, want {T - j}")
    centre(drv, right[j]).click()
    check("(pinned)" not in drv.find_element(By.ID, "info").text, "a second click does not unpin")
    return left


def check_overflow(drv, width):
    sw, iw = drv.execute_script("return [document.scrollingElement.scrollWidth, window.innerWidth];")
    check(sw <= iw, f"at {width} px the page is {sw} px wide (horizontal overflow)")


def check_network(drv):
    """no request for anything but the page's own file"""
    urls = []
    for entry in drv.get_log("performance"):
        msg = entry.get("message", "")
        if '"Network.requestWillBeSent"' in msg:
            start = msg.find('"url":"')
            if start >= 0:
                urls.append(msg[start + 7:msg.find('"', start + 7)])
    remote = [u for u in urls if not u.startswith(("file:", "data:", "about:"))]
    check(not remote, f"the page requests {remote[:3]}")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    page, shots = sys.argv[1], sys.argv[2]
    if not os.path.isfile(page):
        print(f"epar: error: no such file '{page}'", file=sys.stderr)
        print("hint: run 'epar inspect CHECKPOINT' first", file=sys.stderr)
        return 3
    try:
        drv = start_browser(logs=True)
    except Exception as e:  # the browser or its driver is missing or does not start
        print(f"epar: error: cannot start headless chromium: {str(e).splitlines()[0]}", file=sys.stderr)
        print("hint: apt-get install chromium chromium-driver python3-selenium", file=sys.stderr)
        return 3
    os.makedirs(shots, exist_ok=True)
    try:
        drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": CATCH})
        for width in (1400, 420):
            set_width(drv, width)
            drv.get("file://" + os.path.abspath(page))
            check(n_lines(drv) > 0, f"at {width} px: no lines drawn on load")
            check_overflow(drv, width)
            check_controls(drv)
            left = check_tokens(drv)
            check_overflow(drv, width)
            # a question row pinned (the first bold, scored token), for a person to look at
            scored = [t for t in left if "scored" in t.get_attribute("class")]
            centre(drv, scored[0] if scored else left[len(left) // 2]).click()
            drv.execute_script("window.scrollTo(0, 0);")
            drv.save_screenshot(os.path.join(shots, f"head_view_{width}.png"))
            errors = drv.execute_script("return window.__errors;")
            severe = [e["message"] for e in drv.get_log("browser") if e.get("level") == "SEVERE"]
            check(not errors and not severe, f"at {width} px: JavaScript errors {errors[:3]} {severe[:3]}")
            check_network(drv)
    finally:
        drv.quit()
    print(f"# test_head_view: {T.passed} passed, {T.failed} failed")
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main())
