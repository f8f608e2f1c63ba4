#!/usr/bin/python3
"""Loads a head_view.html written by `epar inspect` in headless Chromium (selenium + chromedriver) and checks what a
reader meets:

  - the page loads without a JavaScript error and without any request to the network;
  - it draws lines, and every layer and head the selectors offer changes the view (the set of lines differs);
  - hovering a query token shows its row only (i + 1 lines) and names it; clicking a key token pins its column
    (T - j lines), which stays when the pointer leaves; clicking again unpins it;
  - the weight legend: sample lines for ascending weights with their numbers, drawn as the lines of the view are (a
    pinned row's lines have the width and opacity the legend gives their weights), and the shading scale;
  - the predictions: beside every scored position the model's argmax and a mark, right or wrong, as tokens.csv has
    them (prediction_symbol, correct) and nothing beside the others; the page's count of right answers is tokens.csv's;
  - the model view: a non-blank thumbnail per layer and head; clicking one shows that layer and head in the main view
    (the selectors follow, the lines change) and marks it, and choosing with the selectors moves the mark;
  - no horizontal page overflow at 420 px nor at 1400 px;
  - screenshots at 1400 and 420 px wide (a query row pinned) go to SHOTS/ for a person to look at.

Usage: tests/browser/check_head_view.py HEAD_VIEW.html SHOTS
Prints "not ok ..." per failed check and ends with "# test_head_view: N passed, M failed"; exit 1 on a failure,
3 when the browser cannot start.
"""
import csv
import json
import os
import re
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


def check_legend(drv, left):
    """the legend's samples and a pinned query row's lines use one encoding of the weight"""
    legend = drv.execute_script(
        "return Array.from(document.querySelectorAll('#legend-lines line')).map(function(l){return [+l.dataset.weight,"
        "l.getAttribute('stroke-width'), l.getAttribute('stroke-opacity')];});")
    labels = drv.execute_script("return Array.from(document.querySelectorAll('#legend-lines text'))"
                                ".map(function(t){return t.textContent;});")
    ws = [w for w, _, _ in legend]
    check(len(ws) >= 4 and ws == sorted(ws) and len(set(ws)) == len(ws), f"legend weights {ws}")
    check([float(x) for x in labels] == ws, f"legend numbers {labels} for the weights {ws}")
    widths = [float(x) for _, x, _ in legend]
    check(all(a < b for a, b in zip(widths, widths[1:])), f"legend line widths do not grow with the weight: {widths}")
    check(drv.execute_script("var g=document.getElementById('legend-shading');"
                             "return !!g && getComputedStyle(g).backgroundImage.indexOf('gradient') >= 0;"),
          "no shading scale in the legend")
    # the legend's encoding, as a function of the weight, fitted on its samples: width a + b w, opacity min(1, c + w)
    a, b = widths[0] - ws[0] * (widths[-1] - widths[0]) / (ws[-1] - ws[0]), (widths[-1] - widths[0]) / (ws[-1] - ws[0])
    c = float(legend[0][2]) - ws[0]
    data = json.loads(drv.execute_script("return document.getElementById('data').textContent;"))
    i = len(left) // 2
    centre(drv, left[i]).click()   # pin query i of the first layer and head
    lines = drv.execute_script(
        "return Array.from(document.querySelectorAll('#lines line')).map(function(l){return [+l.getAttribute('y2'),"
        "+l.getAttribute('stroke-width'), +l.getAttribute('stroke-opacity')];});")
    row = data["att"][0][0][i]
    bad = [(j, w) for (y2, w, o), j in zip(sorted(lines), range(len(lines)))
           if abs(w - (a + b * row[j])) > 0.011 or abs(o - min(1, c + row[j])) > 0.0011]
    check(len(lines) == i + 1 and not bad, f"query {i}: {len(lines)} lines; drawn unlike the legend says: {bad[:3]}")
    centre(drv, left[i]).click()   # unpin


def check_predictions(drv, page):
    with open(os.path.join(os.path.dirname(page), "tokens.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    marks = drv.execute_script(
        "return Array.from(document.querySelectorAll('#pred .pr')).map(function(d){return [d.dataset.correct || '',"
        "d.dataset.pred || '', d.textContent];});")
    check(len(marks) == len(rows), f"{len(marks)} prediction cells for {len(rows)} tokens")
    bad = []
    for r, (correct, pred, text) in zip(rows, marks):
        if r["scored"] == "1":
            want = "\u2713" if r["correct"] == "1" else "\u2717"
            if correct != r["correct"] or pred != r["prediction_symbol"] or not text.startswith(pred) or want not in text:
                bad.append((r["position"], correct, pred, text))
        elif correct or text:
            bad.append((r["position"], correct, pred, text))
    scored = sum(r["scored"] == "1" for r in rows)
    check(scored > 0 and not bad, f"{scored} scored positions; prediction marks unlike tokens.csv: {bad[:3]}")
    right = sum(r["correct"] == "1" for r in rows)
    text = drv.find_element(By.TAG_NAME, "body").text
    check(re.search(rf"right at {right} of the {scored} scored positions", text) is not None,
          f"the page does not say 'right at {right} of the {scored} scored positions'")


def check_model_view(drv):
    layer, head = Select(drv.find_element(By.ID, "layer")), Select(drv.find_element(By.ID, "head"))
    n_l, n_h = len(layer.options), len([o for o in head.options if o.get_attribute("value") != "mean"])
    thumbs = drv.find_elements(By.CSS_SELECTOR, "#model .thumb")
    check(len(thumbs) == n_l * n_h, f"{len(thumbs)} thumbnails for {n_l} layers x {n_h} heads")
    blank = drv.execute_script(
        "return Array.from(document.querySelectorAll('#model canvas')).filter(function(c){var d=c.getContext('2d')"
        ".getImageData(0,0,c.width,c.height).data;for(var k=3;k<d.length;k+=4)if(d[k]>0)return false;return true;}).length;")
    check(blank == 0, f"{blank} blank thumbnails")
    layer.select_by_index(0)
    head.select_by_index(0)
    before = view(drv)
    t = thumbs[-1]
    a, b = t.get_attribute("data-layer"), t.get_attribute("data-head")
    centre(drv, t).click()
    key, lines = view(drv)
    check(layer.first_selected_option.get_attribute("value") == a and head.first_selected_option.get_attribute("value") == b,
          f"clicking thumbnail layer {a} head {b}: the selectors show {layer.first_selected_option.text}, "
          f"{head.first_selected_option.text}")
    check(key.startswith(f"{a}:{b}:") and (key, lines) != before, f"clicking thumbnail layer {a} head {b}: the view is {key}")
    marked = [(x.get_attribute("data-layer"), x.get_attribute("data-head"))
              for x in drv.find_elements(By.CSS_SELECTOR, "#model .thumb.sel")]
    check(marked == [(a, b)], f"after the click the marked thumbnails are {marked}")
    layer.select_by_index(0)
    head.select_by_index(0)
    marked = [(x.get_attribute("data-layer"), x.get_attribute("data-head"))
              for x in drv.find_elements(By.CSS_SELECTOR, "#model .thumb.sel")]
    check(marked == [("0", "0")], f"layer 0 head 0 chosen with the selectors: the marked thumbnails are {marked}")
    drv.execute_script("document.activeElement.blur();")


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
            check_legend(drv, left)
            check_predictions(drv, page)
            check_model_view(drv)
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
