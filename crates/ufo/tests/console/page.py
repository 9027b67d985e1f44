"""Drive the ufo console page in headless Chromium (the system's, through the DevTools
protocol with Playwright; no browser is downloaded). Called by crates/ufo/tests/console.rs.

usage: page.py BASE_URL TOKEN MODE [SCREENSHOT | BATCH | SIGNALS | MARKUP]
MODE plain:     log in, start a session (confirm yes), watch its lines until FINISH.
MODE questions: log in, start a session (confirm ask), answer its PENDING question and
                approve its CONFIRM from the page, until FINISH.
MODE batch:     log in, open batch BATCH from the list as soon as it is listed, and read its
                counts and task rows every 200 ms until it is finished.
MODE takeover:  log in, start a session on a private desktop (confirm yes); when the test writes
                SIGNALS/takeover ({"x","y"}: a button's screen centre) take the desktop
                over, click that point in the page's view of it, write SIGNALS/clicked,
                hand back when SIGNALS/handback appears, watch until FINISH.
MODE markup:    MARKUP is {"request", "batch"}: start a session whose request is that text
                (markup in it), watch it until it ends, read the request as the session view
                and the list show it, then open batch BATCH (its task rows hold markup) and
                read its rows; say whether any element or script of the markup came alive.
Prints one JSON object on the last line of stdout.
"""
import json
import os
import sys
import time

from playwright.sync_api import sync_playwright

TIMEOUT_MS = 90_000


def watch_batch(page, batch):
    """The batch view's states as it fills: each distinct (counts, rows), then the last."""
    row = "#batches tbody tr:has-text(%s)" % json.dumps(batch)
    page.wait_for_selector(row)
    page.click(row)
    page.wait_for_selector("#batch-view:not([hidden]) #b-counts:text-matches('tasks done')")
    seen = []
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        counts = page.text_content("#b-counts")
        rows = page.eval_on_selector_all(
            "#b-results tbody tr",
            "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))",
        )
        state = {"counts": counts, "rows": rows}
        if not seen or seen[-1] != state:
            seen.append(state)
        if "(finished)" in counts:
            break
        page.wait_for_timeout(200)
    return {"states": seen, "summary": page.text_content("#b-summary")}


def wait_file(path):
    """The contents of `path` once the test writes it (bounded)."""
    deadline = time.monotonic() + 3 * TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
        time.sleep(0.05)
    raise TimeoutError("the test did not write " + path)


def take_over(page, signals):
    out = {}
    page.fill("#start-request", "Compute 12 + 30")
    page.fill("#start-desktop", "private")
    page.select_option("#start-confirm", "yes")
    page.click("#start-form button")
    page.wait_for_selector("#session-view:not([hidden])")
    out["id"] = page.text_content("#s-id")
    # the button shows once the session's control socket says its desktop is private
    page.wait_for_selector("#takeover:not([hidden])", timeout=3 * TIMEOUT_MS)
    at = json.loads(wait_file(os.path.join(signals, "takeover")))
    page.click("#takeover")
    page.wait_for_selector("#takeover-view:not([hidden])")
    page.wait_for_selector("#handback:not([hidden])")
    # the view of the desktop is shown (a picture of the whole private screen)
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    natural = [0, 0]
    while time.monotonic() < deadline:
        natural = page.evaluate(
            "[document.getElementById('view').naturalWidth,"
            " document.getElementById('view').naturalHeight]"
        )
        if natural[0] > 0:
            break
        page.wait_for_timeout(100)
    out["view"] = natural
    box = page.eval_on_selector("#view", "v => [v.clientWidth, v.clientHeight]")
    # the screen point, in the picture as the page shows it (scaled)
    px, py = at["x"] * box[0] / natural[0], at["y"] * box[1] / natural[1]
    page.click("#view", position={"x": px, "y": py})
    out["s_error_after_click"] = page.text_content("#s-error")
    with open(os.path.join(signals, "clicked"), "w", encoding="utf-8") as f:
        f.write("1")
    wait_file(os.path.join(signals, "handback"))
    page.click("#handback")
    page.wait_for_selector("#takeover-view", state="hidden")
    page.wait_for_selector(
        "#s-status:text-matches('^(FINISH|FAIL|ERROR|CANCELLED|ENDED)$')", timeout=3 * TIMEOUT_MS
    )
    out["status"] = page.text_content("#s-status")
    out["lines"] = page.eval_on_selector_all("#lines .line", "ls => ls.map(l => l.textContent)")
    return out


def markup(page, args):
    """The markup of a start request and of a batch's task rows, as the page shows it."""
    out = {}
    page.fill("#start-request", args["request"])
    page.select_option("#start-confirm", "yes")
    page.click("#start-form button")
    page.wait_for_selector("#session-view:not([hidden])")
    out["id"] = page.text_content("#s-id")
    page.wait_for_selector("#s-status:text-matches('^(FINISH|FAIL|ERROR|CANCELLED|ENDED)$')")
    out["status"] = page.text_content("#s-status")
    out["shown_request"] = page.text_content("#s-request")
    page.click("#back")
    page.wait_for_selector("#sessions tbody tr")
    out["listed"] = page.eval_on_selector_all(
        "#sessions tbody tr", "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    row = "#batches tbody tr:has-text(%s)" % json.dumps(args["batch"])
    page.wait_for_selector(row)
    page.click(row)
    page.wait_for_selector("#batch-view:not([hidden]) #b-counts:text-matches('finished')")
    page.wait_for_selector("#b-results tbody tr")
    out["batch_rows"] = page.eval_on_selector_all(
        "#b-results tbody tr", "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    out["injected_element"] = page.evaluate(
        "['injected-request', 'injected-task', 'injected-app', 'injected-reason']"
        ".some(id => document.getElementById(id) !== null)"
    )
    out["injected_script"] = page.evaluate("window.injected !== undefined")
    out["script_elements"] = page.evaluate("document.querySelectorAll('script').length")
    return out


def main():
    base, token, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    shot = sys.argv[4] if len(sys.argv) > 4 else ""
    out = {"mode": mode}
    chromium = os.environ.get("UFO_CHROMIUM", "/usr/bin/chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(base + "/")
        page.wait_for_selector("#login-view:not([hidden])")
        page.fill("#token", "wrong-token")
        page.click("#login-form button")
        # (selectors, not wait_for_function: the page's CSP forbids evaluating strings)
        page.wait_for_selector("#login-error:text-matches('.+')")
        out["bad_login"] = page.text_content("#login-error")
        page.fill("#token", token)
        page.click("#login-form button")
        page.wait_for_selector("#list-view:not([hidden])")
        if mode == "batch":
            out.update(watch_batch(page, sys.argv[4]))
            out["errors"] = errors
            browser.close()
            print(json.dumps(out))
            return
        if mode == "markup":
            out.update(markup(page, json.loads(sys.argv[4])))
            out["errors"] = errors
            browser.close()
            print(json.dumps(out))
            return
        if mode == "takeover":
            out.update(take_over(page, sys.argv[4]))
            out["errors"] = errors
            browser.close()
            print(json.dumps(out))
            return
        if mode == "plain":
            page.fill("#start-request", "Delete all content of report.odt")
            page.select_option("#start-confirm", "yes")
        else:
            page.fill("#start-request", "Clear the document the user names")
            page.select_option("#start-confirm", "ask")
        page.click("#start-form button")
        page.wait_for_selector("#session-view:not([hidden])")
        out["id"] = page.text_content("#s-id")
        if mode == "questions":
            page.wait_for_selector("#ask:not([hidden]) #ask-pending:not([hidden])")
            out["pending"] = page.text_content("#ask-text")
            page.fill("#ask-answer", "the-quarterly-one")
            page.click("#ask-pending button")
            page.wait_for_selector("#ask:not([hidden]) #ask-confirm:not([hidden])")
            out["confirm"] = page.text_content("#ask-text")
            # the host's plan, from its ASSIGN step, while the app's CONFIRM waits
            page.wait_for_selector("#s-plan-line:not([hidden]) #s-plan li")
            out["plan"] = page.eval_on_selector_all("#s-plan li", "ls => ls.map(l => l.textContent)")
            out["confirm_injected"] = page.evaluate(
                "document.getElementById('injected-control') !== null"
            )
            page.click("#approve")
        page.wait_for_selector("#s-status:text-matches('^(FINISH|FAIL|ERROR|CANCELLED|ENDED)$')")
        out["status"] = page.text_content("#s-status")
        out["lines"] = page.eval_on_selector_all("#lines .line", "ls => ls.map(l => l.textContent)")
        out["subtask"] = page.text_content("#s-subtask")
        out["injected_element"] = page.evaluate(
            "['injected', 'injected-control', 'injected-result']"
            ".some(id => document.getElementById(id) !== null)"
        )
        out["injected_script"] = page.evaluate("window.injected !== undefined")
        out["script_elements"] = page.evaluate("document.querySelectorAll('script').length")
        if shot:
            page.wait_for_timeout(500)
            page.screenshot(path=shot, full_page=True)
        # back to the list: the session is listed with its status
        page.click("#back")
        page.wait_for_selector("#sessions tbody tr")
        out["listed"] = page.eval_on_selector_all(
            "#sessions tbody tr", "rs => rs.map(r => r.textContent)"
        )
        out["errors"] = errors
        browser.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
