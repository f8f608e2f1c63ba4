#!/usr/bin/python3
"""Loads epar's index.html and report/REPORT.html in headless Chromium (selenium + chromedriver, Debian packages
chromium, chromium-driver, python3-selenium) and checks what a reader meets:

  - every link and image resolves: relative links name an existing file (and an existing id for a #fragment),
    no link leaves the folder for the network, every image decodes (naturalWidth > 0);
  - no horizontal page overflow at 420 px (document.scrollingElement.scrollWidth <= innerWidth), nor at 1400 px;
  - the verdict filter shows exactly the rows of claims.csv with the chosen verdict, for every verdict offered;
  - every image has its width and height, so a contents link lands at its heading even after the lazy images above
    it have loaded (at 1400 and 420 px);
  - no verdict is broken inside a word ("inconclusiv e"), at 1400, 1000, 800 and 420 px;
  - no caption or alt text shows gnuplot's markup ({/Symbol a}, A_{ij}) instead of what it stands for;
  - screenshots at 1400 and 420 px wide go to OUT/screenshots/ for a person to look at.

Usage: tests/browser/check_report.py OUT     (OUT: the --out folder of an `epar run-all`)
Prints "not ok ..." per failed check and ends with "# test_browser: N passed, M failed"; exit 1 on a failure,
3 when the browser cannot start. Chromium refuses to run as root without --no-sandbox: the flag is passed then.
"""
import csv
import os
import sys
import time
import urllib.parse

from chromium import Tally, start_browser   # first: it reports a missing selenium (exit 3)
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select


T = Tally("test_browser")
check = T.check


def set_width(drv, width, height=1000):
    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def load(drv, path):
    drv.get("file://" + os.path.abspath(path))
    # lazy images below the fold would never load in a screenshot-less check: load them all now
    drv.execute_script("document.querySelectorAll('img').forEach(function(i){i.loading='eager';});")
    for _ in range(300):
        if drv.execute_script("return Array.from(document.images).every(function(i){return i.complete;});"):
            break
        time.sleep(0.1)


def check_links(drv, page):
    """every a[href] and img[src] of the loaded page resolves to a file under the output, ids for fragments"""
    base = os.path.dirname(os.path.abspath(page))
    links = drv.execute_script(
        "return Array.from(document.querySelectorAll('a[href]')).map(function(a){return a.getAttribute('href');})"
        ".concat(Array.from(document.images).map(function(i){return i.getAttribute('src');}));")
    ids = set(drv.execute_script("return Array.from(document.querySelectorAll('[id]')).map(function(e){return e.id;});"))
    bad = []
    for href in links:
        u = urllib.parse.urlsplit(href)
        if u.scheme or u.netloc:
            bad.append(f"{href} (leaves the folder)")
            continue
        if not u.path:
            if urllib.parse.unquote(u.fragment) not in ids:
                bad.append(f"{href} (no such id)")
            continue
        target = os.path.normpath(os.path.join(base, urllib.parse.unquote(u.path)))
        if not os.path.isfile(target):
            bad.append(f"{href} (no file)")
    check(not bad, f"{os.path.basename(page)}: {len(bad)} of {len(links)} links do not resolve: {bad[:5]}")
    broken = drv.execute_script(
        "return Array.from(document.images).filter(function(i){return !(i.naturalWidth>0);})"
        ".map(function(i){return i.getAttribute('src');});")
    check(not broken, f"{os.path.basename(page)}: {len(broken)} images do not load: {broken[:5]}")
    return len(links)


def check_overflow(drv, page, width):
    sw, iw = drv.execute_script("return [document.scrollingElement.scrollWidth, window.innerWidth];")
    check(sw <= iw, f"{os.path.basename(page)} at {width} px: the page is {sw} px wide (horizontal overflow)")


def check_filter(drv, claims):
    by_verdict = {}
    for row in claims:
        by_verdict.setdefault(row["verdict"], set()).add(row["claim_id"])
    sel = Select(drv.find_element(By.ID, "verdict-filter"))
    offered = [(o.get_attribute("value"), o.text) for o in sel.options]
    check(offered and offered[0][0] == "all", "the filter offers 'all' first")
    names = {}
    for value, text in offered[1:]:
        names[value] = text.rsplit(" (", 1)[0]
    check(set(names.values()) == set(by_verdict), f"the filter offers the verdicts of claims.csv: {sorted(names.values())} "
          f"vs {sorted(by_verdict)}")
    for value, _ in offered:
        sel.select_by_value(value)
        shown = drv.execute_script(
            "return Array.from(document.querySelectorAll('tr.claim')).filter(function(r){return r.offsetParent!==null;})"
            ".map(function(r){return r.id.replace(/^claim-/,'');});")
        want = {r["claim_id"] for r in claims} if value == "all" else by_verdict.get(names[value], set())
        check(sorted(shown) == sorted(want) and len(shown) == len(want),
              f"filter '{value}': shows {len(shown)} rows, claims.csv has {len(want)} "
              f"(extra {sorted(set(shown) - want)[:3]}, missing {sorted(want - set(shown))[:3]})")
        status = drv.find_element(By.ID, "filter-status").text
        check(status.startswith(f"{len(want)} claim"), f"filter '{value}': status says '{status}'")
    sel.select_by_value("all")


def check_anchor_lands(drv, page, width):
    """a contents link to a figure folder far down the page: after the jump, every lazy image is made to load (as
    scrolling around would), and the heading must still be at the top of the window (or the page scrolled to its
    end). Without the images' sizes, those above the heading grow from 0 px when they load and push it down."""
    drv.get("file://" + os.path.abspath(page))   # lazy images as a reader gets them (load() makes them eager)
    targets = drv.execute_script(
        "return Array.from(document.querySelectorAll('nav.toc a[href^=\"#fig-\"]')).map(function(a){"
        "return a.getAttribute('href');});")
    check(targets, f"{os.path.basename(page)}: the contents link figure folders")
    if not targets:
        return
    href = targets[len(targets) // 2]
    # Chromium keeps the visible content in place when content above it grows (scroll anchoring); Safari does not,
    # and neither does Chromium when the growth happens before the first paint: without it, only reserved sizes help
    drv.execute_script("document.documentElement.style.overflowAnchor='none';document.body.style.overflowAnchor='none';")
    drv.find_element(By.CSS_SELECTOR, f'nav.toc a[href="{href}"]').click()
    time.sleep(0.3)
    drv.execute_script("document.querySelectorAll('img').forEach(function(i){i.loading='eager';});")
    for _ in range(300):
        if drv.execute_script("return Array.from(document.images).every(function(i){return i.complete;});"):
            break
        time.sleep(0.1)
    time.sleep(0.3)
    top, at_end = drv.execute_script(
        "var e=document.getElementById(arguments[0]), s=document.scrollingElement;"
        "return [e.getBoundingClientRect().top, Math.ceil(s.scrollTop + window.innerHeight) >= s.scrollHeight];",
        href[1:])
    check(abs(top) <= 2 or (at_end and top > 0),
          f"{os.path.basename(page)} at {width} px: after the images loaded, the contents link {href} shows its heading "
          f"at {top:.0f} px from the top of the window, not at 0")


def check_images_sized(drv, page):
    unsized = drv.execute_script(
        "return Array.from(document.images).filter(function(i){"
        "return !(i.getAttribute('width') > 0 && i.getAttribute('height') > 0);}).map(function(i){"
        "return i.getAttribute('src');});")
    check(not unsized, f"{os.path.basename(page)}: {len(unsized)} images without width and height: {unsized[:3]}")
    wrong = drv.execute_script(
        "return Array.from(document.images).filter(function(i){return i.naturalWidth>0 && "
        "(i.naturalWidth != i.getAttribute('width') || i.naturalHeight != i.getAttribute('height'));}).map(function(i){"
        "return i.getAttribute('src')+' '+i.naturalWidth+'x'+i.naturalHeight+' vs '+i.getAttribute('width')+'x'+"
        "i.getAttribute('height');});")
    check(not wrong, f"{os.path.basename(page)}: images whose width and height are not the PNG's: {wrong[:3]}")


def check_verdict_words(drv, width):
    """each word of a verdict cell on one line: a word split over two lines has two client rects"""
    broken = drv.execute_script(
        "var bad=[];document.querySelectorAll('table.claims td[data-label=verdict]').forEach(function(td){"
        " if(td.offsetParent===null)return;"
        " var w=document.createTreeWalker(td,NodeFilter.SHOW_TEXT),n;"
        " while((n=w.nextNode())){var re=/\\S+/g,m;while((m=re.exec(n.data))){"
        "  var r=document.createRange();r.setStart(n,m.index);r.setEnd(n,m.index+m[0].length);"
        "  var rs=Array.from(r.getClientRects()).filter(function(x){return x.width>0;});"
        "  if(rs.length>1)bad.push(td.closest('tr').id+': '+m[0]);}}});return bad;")
    check(not broken, f"index.html at {width} px: {len(broken)} verdict words broken over two lines: {broken[:3]}")


def check_markup(drv, page):
    raw = drv.execute_script(
        "return Array.from(document.querySelectorAll('figcaption')).map(function(c){return c.textContent;})"
        ".concat(Array.from(document.images).map(function(i){return i.alt;}))"
        ".filter(function(t){return /\\{\\/|[_^]\\{/.test(t);});")
    check(not raw, f"{os.path.basename(page)}: {len(raw)} captions or alt texts with gnuplot markup: {raw[:3]}")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    index, report = os.path.join(out, "index.html"), os.path.join(out, "report", "REPORT.html")
    claims_csv = os.path.join(out, "report", "claims.csv")
    for p in (index, report, claims_csv):
        if not os.path.isfile(p):
            print(f"epar: error: no such file '{p}'", file=sys.stderr)
            print("hint: run 'epar run-all --out DIR' first", file=sys.stderr)
            return 3
    with open(claims_csv, newline="", encoding="utf-8") as f:
        claims = list(csv.DictReader(f))
    try:
        drv = start_browser()
    except Exception as e:  # the browser or its driver is missing or does not start
        print(f"epar: error: cannot start headless chromium: {str(e).splitlines()[0]}", file=sys.stderr)
        print("hint: apt-get install chromium chromium-driver python3-selenium", file=sys.stderr)
        return 3
    shots = os.path.join(out, "screenshots")
    os.makedirs(shots, exist_ok=True)
    try:
        for width in (1400, 420):
            set_width(drv, width)
            for page in (index, report):
                load(drv, page)
                if width == 1400:
                    check_links(drv, page)
                    check_images_sized(drv, page)
                    check_markup(drv, page)
                check_overflow(drv, page, width)
                name = os.path.splitext(os.path.basename(page))[0].lower()
                drv.save_screenshot(os.path.join(shots, f"{name}_{width}.png"))
            check_anchor_lands(drv, index, width)
            load(drv, index)
            check_verdict_words(drv, width)
            check_filter(drv, claims)
            # the claims part at this width, filtered to one verdict, for a person to look at
            sel = Select(drv.find_element(By.ID, "verdict-filter"))
            sel.select_by_index(min(2, len(sel.options) - 1))
            drv.execute_script("document.getElementById('claims').scrollIntoView();")
            check_overflow(drv, index + " (filtered)", width)
            drv.save_screenshot(os.path.join(shots, f"index_claims_{width}.png"))
        for width in (1000, 800):   # between the two: the table at its narrowest before the one-column layout
            set_width(drv, width)
            drv.get("file://" + os.path.abspath(index))
            check_verdict_words(drv, width)
        check(all(os.path.getsize(os.path.join(shots, f)) > 0 for f in os.listdir(shots)), "screenshots written")
    finally:
        drv.quit()
    print(f"# screenshots in {shots}/")
    print(f"# test_browser: {T.passed} passed, {T.failed} failed")
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main())
