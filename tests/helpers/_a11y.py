"""An accessibility audit of a page as chromium renders it: what a screen reader is told
(`lang`, one h1, landmarks, every control and link named, ids that descriptions point
at, error messages announced), what a keyboard user meets (Tab order against the DOM
and the visual order, a visible focus indicator on every stop) and what a reader sees
(text contrast from the computed styles; no sideways scrolling on a phone).

The checks are plain JavaScript run in the page, so they see the rendered result (the
stylesheet applied, `hidden` honoured, the layout at the viewport's width). Each returns
a list of problems in words, empty when the page passes; a test asserts it is empty, so
a failure names every problem at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Page

# Shared by the checks below: colours, the background behind an element, names.
_COMMON = """
const parse = (css) => {
  const m = css.match(/rgba?\\(([^)]+)\\)/);
  if (!m) return null;
  const parts = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
  return {r: parts[0], g: parts[1], b: parts[2], a: parts.length > 3 ? parts[3] : 1};
};
const over = (top, under) => {
  const a = top.a + under.a * (1 - top.a);
  const mix = (t, u) => a ? (t * top.a + u * under.a * (1 - top.a)) / a : 0;
  return {r: mix(top.r, under.r), g: mix(top.g, under.g), b: mix(top.b, under.b), a};
};
const luminance = (c) => {
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
};
const ratio = (a, b) => {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
};
// The colour behind `el`: its own background and its ancestors', composed over white
// (the canvas). A background image makes it unknown (null): none is used here.
const backdrop = (el) => {
  const layers = [];
  for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
    const style = getComputedStyle(node);
    if (style.backgroundImage !== 'none') return null;
    const colour = parse(style.backgroundColor);
    if (colour && colour.a > 0) { layers.push(colour); if (colour.a >= 1) break; }
  }
  let result = {r: 255, g: 255, b: 255, a: 1};
  for (const layer of layers.reverse()) result = over(layer, result);
  return result;
};
const describe = (el) => {
  let text = el.tagName.toLowerCase();
  if (el.id) text += '#' + el.id;
  const name = el.getAttribute('name');
  if (name) text += `[name=${name}]`;
  const words = (el.innerText || el.value || '').trim().replace(/\\s+/g, ' ').slice(0, 40);
  return words ? `${text} "${words}"` : text;
};
const textOf = (ids) => ids.split(/\\s+/).filter(Boolean)
  .map((id) => { const n = document.getElementById(id); return n ? n.textContent : ''; })
  .join(' ').trim();
// The accessible name, as far as these pages need it (no ARIA roles that rename).
const nameOf = (el) => {
  if (el.getAttribute('aria-labelledby')) return textOf(el.getAttribute('aria-labelledby'));
  if ((el.getAttribute('aria-label') || '').trim()) return el.getAttribute('aria-label').trim();
  if (el.labels && el.labels.length) {
    return Array.from(el.labels).map((l) => l.textContent).join(' ').trim();
  }
  if (el.tagName === 'INPUT' && ['submit', 'button', 'reset'].includes(el.type)) return el.value;
  if (['BUTTON', 'A', 'SUMMARY'].includes(el.tagName)) return el.textContent.trim();
  return (el.getAttribute('title') || '').trim();
};
const shown = (el) => {
  const rect = el.getBoundingClientRect();
  return rect.width > 0 && rect.height > 0 && getComputedStyle(el).visibility !== 'hidden';
};
"""

_AUDIT = (
    "() => {"
    + _COMMON
    + """
const problems = [];
if (!document.documentElement.lang) problems.push('no lang on <html>');
if (!document.title.trim()) problems.push('no <title>');
const h1 = document.querySelectorAll('h1');
if (h1.length !== 1) problems.push(`${h1.length} h1 elements, not one`);
let level = 0;
for (const h of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
  const now = Number(h.tagName[1]);
  if (now > level + 1) problems.push(`${describe(h)} skips a heading level after h${level}`);
  level = now;
}

// Landmarks: one main, one banner, named navigations; all content inside them.
if (document.querySelectorAll('main').length !== 1) problems.push('not one <main>');
const banners = Array.from(document.querySelectorAll('header')).filter((h) => !h.closest('main'));
if (banners.length !== 1) problems.push('not one banner <header>');
for (const nav of document.querySelectorAll('nav')) {
  if (!nameOf(nav)) problems.push(`${describe(nav)} has no name (aria-label)`);
}
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const el = node.parentElement;
  if (!node.textContent.trim() || !shown(el) || el.closest('script')) continue;
  if (!el.closest('main, header, nav, footer, aside') && !el.closest('a.skip')) {
    problems.push(`text outside the landmarks: ${describe(el)}`);
  }
}

// Every id unique; every id a label or a description points at exists.
const seen = new Set();
for (const el of document.querySelectorAll('[id]')) {
  if (seen.has(el.id)) problems.push(`the id ${el.id} is used twice`);
  seen.add(el.id);
}
for (const attr of ['aria-describedby', 'aria-labelledby']) {
  for (const el of document.querySelectorAll(`[${attr}]`)) {
    for (const id of el.getAttribute(attr).split(/\\s+/).filter(Boolean)) {
      if (!document.getElementById(id)) problems.push(`${describe(el)}: ${attr} ${id} is missing`);
    }
  }
}
for (const label of document.querySelectorAll('label[for]')) {
  const target = document.getElementById(label.htmlFor);
  if (!target) problems.push(`${describe(label)} is for a missing id`);
}

// Every control and link has a name; every shown control's name is on screen (a label).
for (const el of document.querySelectorAll('input, select, textarea, button, a[href], summary')) {
  if (el.type === 'hidden' || el.closest('[hidden]')) continue;
  if (!nameOf(el)) problems.push(`${describe(el)} has no label or name`);
  if (['INPUT', 'SELECT', 'TEXTAREA'].includes(el.tagName) && !(el.labels && el.labels.length)) {
    problems.push(`${describe(el)} has no <label>`);
  }
}
for (const el of document.querySelectorAll('[tabindex]')) {
  if (el.tabIndex > 0) problems.push(`${describe(el)} has a positive tabindex`);
}

// Error messages are announced; a field marked invalid says why.
for (const el of document.querySelectorAll('.message')) {
  if (el.getAttribute('role') !== 'alert') problems.push(`${describe(el)}: a message without role=alert`);
}
const invalid = document.querySelectorAll('[aria-invalid=true]');
if (invalid.length && !document.querySelector('[role=alert]')) {
  problems.push('fields are marked invalid but no alert says so');
}
for (const el of invalid) {
  if (!textOf(el.getAttribute('aria-describedby') || '')) {
    problems.push(`${describe(el)} is invalid without a description saying why`);
  }
}

// Text contrast: 4.5:1, or 3:1 for large text (24px, or 18.66px bold).
const checked = new Set();
const contrast = (el, colour) => {
  if (checked.has(el)) return;
  checked.add(el);
  const style = getComputedStyle(el);
  const behind = backdrop(el);
  if (!colour || !behind) { problems.push(`${describe(el)}: contrast unknown`); return; }
  const size = parseFloat(style.fontSize);
  const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
  const need = large ? 3 : 4.5;
  const found = ratio(over(colour, behind), behind);
  if (found < need) {
    problems.push(`${describe(el)}: contrast ${found.toFixed(2)}:1, below ${need}:1`);
  }
};
const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let node = texts.nextNode(); node; node = texts.nextNode()) {
  const el = node.parentElement;
  if (!node.textContent.trim() || !shown(el) || el.closest('script, title, desc')) continue;
  if (el.closest('.visually-hidden')) continue;
  const style = getComputedStyle(el);
  // SVG text is painted with its fill.
  contrast(el, parse(el instanceof SVGElement ? style.fill : style.color));
}
for (const el of document.querySelectorAll('input, select, textarea')) {
  if (el.type === 'hidden' || el.type === 'checkbox' || el.type === 'radio' || !shown(el)) continue;
  contrast(el, parse(getComputedStyle(el).color));
}
return problems;
}"""
)

# Records, for every element that takes focus from now on, where it is on the page and
# how its focus shows (read as it gets focus: one call for the whole walk, not one a stop).
_RECORD_FOCUS = (
    "() => {"
    + _COMMON
    + """
const info = (el) => {
  const rect = el.getBoundingClientRect();
  const style = getComputedStyle(el);
  const problems = [];
  if (!shown(el) || rect.right <= 0 || rect.bottom <= 0 || rect.width < 2 || rect.height < 2) {
    problems.push('focused but not visible');
  }
  if (!el.matches(':focus-visible')) problems.push('not :focus-visible after Tab');
  const width = parseFloat(style.outlineWidth) || 0;
  if (style.outlineStyle === 'auto') {
    // The browser's own focus ring, drawn to be seen on any background.
  } else if (style.outlineStyle === 'none' || width < 2) {
    problems.push(`no focus outline (${style.outlineStyle} ${style.outlineWidth})`);
  } else {
    // The outline is drawn around the element, on its parent's background.
    const behind = backdrop(el.parentElement || el);
    const found = behind ? ratio(parse(style.outlineColor), behind) : 0;
    if (found < 3) problems.push(`focus outline contrast ${found.toFixed(2)}:1, below 3:1`);
  }
  return {
    what: describe(el),
    index: Array.from(document.querySelectorAll('*')).indexOf(el),
    top: rect.top + scrollY, bottom: rect.bottom + scrollY,
    left: rect.left + scrollX, right: rect.right + scrollX,
    problems,
  };
};
if (!window.fgcpayFocusStops) {
  document.addEventListener('focusin', (event) => {
    window.fgcpayFocusStops.push(info(event.target));
  }, true);
}
window.fgcpayFocusStops = [];
return document.activeElement === document.body;
}"""
)

# What Tab should reach, in document order (no positive tabindex: _AUDIT checks).
_TABBABLE = (
    "() => {"
    + _COMMON
    + """
const selector = 'a[href], button, input, select, textarea, summary, [tabindex]';
const found = [];
for (const el of document.querySelectorAll(selector)) {
  if (el.disabled || el.tabIndex < 0 || el.type === 'hidden' || el.closest('[hidden]')) continue;
  const closed = el.closest('details:not([open])');
  if (closed && el !== closed.querySelector('summary')) continue;
  if (el.tagName === 'INPUT' && el.type === 'radio' && !el.checked && el.name) continue;
  if (!shown(el) && !el.matches('a.skip')) continue;
  found.push({what: describe(el), index: Array.from(document.querySelectorAll('*')).indexOf(el)});
}
return found;
}"""
)


def audit(page: Page) -> list[str]:
    """What the page's markup and rendered styles get wrong (see the module's docstring)."""
    found: list[str] = page.evaluate(_AUDIT)
    return found


def horizontal_scroll(page: Page) -> list[str]:
    """Whether the page scrolls sideways at its viewport's width (it must not on a phone)."""
    found: dict[str, int] = page.evaluate(
        "() => ({page: document.documentElement.scrollWidth, viewport: innerWidth})"
    )
    if found["page"] > found["viewport"]:
        return [f"scrolls sideways: {found['page']} px wide at {found['viewport']} px"]
    return []


def _before(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether `b` is visually before `a` in reading order (left to right on a line, lines
    top to bottom; a column to the right of `a`, even higher up, comes after it)."""
    tolerance = 2
    same_line = b["top"] < a["bottom"] - tolerance and a["top"] < b["bottom"] - tolerance
    if same_line:
        return bool(b["right"] <= a["left"] + tolerance)
    if b["bottom"] <= a["top"] + tolerance:
        return bool(b["left"] < a["right"] - tolerance)
    return False


def tab_walk(page: Page) -> list[str]:
    """Press Tab from the top of the page through every stop and back out: the stops must
    be every tabbable element in document order, each after the one before it on screen,
    each with a visible focus indicator; the first is the skip link. (The stops are
    recorded by a listener in the page: it needs JavaScript enabled.)"""
    expected: list[dict[str, Any]] = page.evaluate(_TABBABLE)
    at_top = page.evaluate(_RECORD_FOCUS)
    presses = len(expected) + 1
    if not at_top:
        # Focus leaves the page after its last stop; the next Tab starts again at the top.
        for _ in range(presses):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement === document.body"):
                break
        page.evaluate("window.fgcpayFocusStops = []")
    for _ in range(presses):
        page.keyboard.press("Tab")
    recorded: list[dict[str, Any]] = page.evaluate("window.fgcpayFocusStops")
    stops: list[dict[str, Any]] = []
    for stop in recorded:
        if stops and stop["index"] == stops[0]["index"]:
            break  # round again
        stops.append(stop)
    problems: list[str] = []
    if [s["index"] for s in stops] != [e["index"] for e in expected]:
        problems.append(
            "Tab reached "
            + ", ".join(s["what"] for s in stops)
            + "; expected "
            + ", ".join(e["what"] for e in expected)
        )
    if stops and "Skip to content" not in stops[0]["what"]:
        problems.append(f"the first Tab stop is {stops[0]['what']}, not the skip link")
    for before, after in zip(stops, stops[1:], strict=False):
        if _before(before, after):
            problems.append(f"Tab goes back on screen: {before['what']} -> {after['what']}")
    for stop in stops:
        problems.extend(f"{stop['what']}: {problem}" for problem in stop["problems"])
    return problems
