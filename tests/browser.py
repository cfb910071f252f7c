"""Open a page in Debian's headless Chromium (through Playwright) and report what it did.

Used by the report's tests and by ``make report-screenshot``. Playwright drives the system's
``/usr/bin/chromium``; it never downloads a browser. Every request the page makes is
recorded (and refused unless it is the page itself), and so is every console message.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
# Without these Chromium reaches for Google's hosts at start; this machine's network refuses them.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Visit:
    """What the page did: its requests, its console messages and its page errors."""

    requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    evaluated: dict[str, Any] = field(default_factory=dict)


def visit(page_path: Path, screenshot: Path | None = None, scripts: dict[str, str] | None = None) -> Visit:
    """Load ``page_path`` from disk, optionally screenshot it, and evaluate ``scripts`` (name -> JS)."""
    from playwright.sync_api import sync_playwright

    seen = Visit()
    url = page_path.resolve().as_uri()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.on("request", lambda request: seen.requests.append(request.url))
            page.on("console", lambda message: seen.console.append((message.type, message.text)))
            page.on("pageerror", lambda error: seen.page_errors.append(str(error)))
            page.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
            page.goto(url, wait_until="load")
            for name, script in (scripts or {}).items():
                seen.evaluated[name] = page.evaluate(script)
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return seen


if __name__ == "__main__":  # python -m tests.browser page.html shot.png (make report-screenshot)
    result = visit(Path(sys.argv[1]), Path(sys.argv[2]))
    if [r for r in result.requests if not r.startswith("file:")] or result.console or result.page_errors:
        raise SystemExit(f"the page made requests or logged: {result}")
    print(f"Wrote {sys.argv[2]}")
