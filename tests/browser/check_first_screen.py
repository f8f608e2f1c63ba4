#!/usr/bin/python3
"""What index.html shows before any scrolling, at 1280 x 800 in headless Chromium: the bottom line (its heading and
every one of its sentences inside the window, each linking to claims of the page), and, when the audited benchmark
is a reduced run (the smoke budget, a subset of the grid), the budget banner above it; without one, no banner.

Usage: tests/browser/check_first_screen.py OUT [--banner | --no-banner]   (OUT: the --out folder of epar run-all)
Prints "not ok ..." per failed check and ends with "# test_first_screen: N passed, M failed"; exit 1 on a failure,
3 when the browser cannot start. A screenshot of the first screen goes to OUT/screenshots/first_screen.png.
"""
import os
import sys

from chromium import Tally, start_browser   # first: it reports a missing selenium (exit 3)

T = Tally("test_first_screen")
check = T.check
W, H = 1280, 800


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("--banner", "--no-banner"):
        print(__doc__, file=sys.stderr)
        return 2
    out, want_banner = sys.argv[1], sys.argv[2] == "--banner"
    index = os.path.join(out, "index.html")
    if not os.path.isfile(index):
        print(f"epar: error: no such file '{index}'", file=sys.stderr)
        print("hint: run 'epar run-all --out DIR' first", file=sys.stderr)
        return 3
    try:
        drv = start_browser()
    except Exception as e:  # the browser or its driver is missing or does not start
        print(f"epar: error: cannot start headless chromium: {str(e).splitlines()[0]}", file=sys.stderr)
        print("hint: apt-get install chromium chromium-driver python3-selenium", file=sys.stderr)
        return 3
    shots = os.path.join(out, "screenshots")
    os.makedirs(shots, exist_ok=True)
    try:
        drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": W, "height": H, "deviceScaleFactor": 1, "mobile": False})
        drv.get("file://" + os.path.abspath(index))
        inner = drv.execute_script("return [window.innerWidth, window.innerHeight];")
        check(inner == [W, H], f"the window is {inner[0]} x {inner[1]}, not {W} x {H}")
        # every box of the bottom line, with its place in the window (scrolled to the top)
        boxes = drv.execute_script(
            "window.scrollTo(0,0);var s=document.getElementById('bottom-line');if(!s)return null;"
            "function r(e){var b=e.getBoundingClientRect();return [b.top,b.bottom,b.height,e.textContent];}"
            "return {head:r(s.querySelector('h2')),items:Array.from(s.querySelectorAll('li')).map(r),"
            "links:Array.from(s.querySelectorAll('li')).map(function(li){return Array.from(li.querySelectorAll("
            "'a[href^=\"#claim\"]')).filter(function(a){return document.getElementById("
            "a.getAttribute('href').slice(1));}).length;})};")
        check(boxes is not None, "index.html has a bottom line (#bottom-line)")
        if boxes:
            check(0 <= boxes["head"][0] and boxes["head"][1] <= H, f"its heading is on the first screen "
                  f"(at {boxes['head'][0]:.0f}-{boxes['head'][1]:.0f} px)")
            check(len(boxes["items"]) >= 2, f"it has sentences ({len(boxes['items'])})")
            off = [b[3][:60] for b in boxes["items"] if not (b[2] > 0 and 0 <= b[0] and b[1] <= H)]
            check(not off, f"{len(off)} of its {len(boxes['items'])} sentences are below the first screen: {off[:2]}")
            unlinked = [b[3][:60] for b, n in zip(boxes["items"], boxes["links"]) if n == 0]
            check(not unlinked, f"sentences without a link to claims of the page: {unlinked[:2]}")
        banner = drv.execute_script(
            "var e=document.getElementById('budget-banner');if(!e)return null;var b=e.getBoundingClientRect();"
            "return [b.top,b.bottom,b.height,e.textContent];")
        if want_banner:
            check(banner is not None, "a reduced benchmark: index.html has the budget banner (#budget-banner)")
            if banner:
                check(banner[2] > 0 and 0 <= banner[0] and banner[1] <= H,
                      f"the banner is on the first screen (at {banner[0]:.0f}-{banner[1]:.0f} px)")
                check("budget smoke" in banner[3] or "command-line changes" in banner[3],
                      f"the banner names the budget or the subset: {banner[3][:120]}")
        else:
            check(banner is None, "a full benchmark (or none): no budget banner")
        drv.save_screenshot(os.path.join(shots, "first_screen.png" if not want_banner else "first_screen_smoke.png"))
    finally:
        drv.quit()
    print(f"# test_first_screen: {T.passed} passed, {T.failed} failed")
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main())
