"""CON-1..CON-7: the web console driven in real headless Chromium against the real local server.

The server is `chat-local-server` (what `make run` starts) with the stand-in model behind it; the browser
is Debian's `chromium` through its `chromedriver` (Selenium). Every wait has a deadline and polls a
condition (at pauses growing from 50 to 250 ms); nothing else sleeps. After each test the browser's own
logs are read: no JavaScript error, no Content-Security-Policy violation, and no request to any origin
but the API's.

Without a browser these tests skip, saying how to install one; with CONSOLE_BROWSER_REQUIRED=1 (set by
`.ci/run`, which installs it) a missing browser fails instead. CONSOLE_SCREENSHOTS=<dir> keeps the
screenshots docs/console.md shows (`make screenshots`).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

from tests.support.jwt_issuer import jwt_issuer
from tests.support.local_server import ServerProcess, settle_streams
from tests.support.openai_standin import OpenAIStandin

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
INSTALL_HINT = (
    "install Chromium and its driver: `sudo apt-get install -y chromium chromium-driver` (make browser)"
)

if not (CHROMIUM and CHROMEDRIVER):
    if os.environ.get("CONSOLE_BROWSER_REQUIRED") == "1":
        raise RuntimeError(f"CONSOLE_BROWSER_REQUIRED=1 but no Chromium was found; {INSTALL_HINT}")
    pytest.skip(f"the console's browser tests need Chromium; {INSTALL_HINT}", allow_module_level=True)

from selenium import webdriver  # noqa: E402 - only once a browser is known to exist
from selenium.common.exceptions import (  # noqa: E402
    NoSuchElementException,
    StaleElementReferenceException,
    TimeoutException,
)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402

pytestmark = pytest.mark.e2e

T = TypeVar("T")
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def server(standin: OpenAIStandin, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """`make run`'s server, its model the stand-in; summaries off so every drop is the window's own."""
    process = ServerProcess(
        tmp_path_factory.mktemp("console-data"),
        env={
            "LLM_BASE_URL": standin.base_url,
            "LLM_MODEL": "standin-model",
            "LLM_MAX_RETRIES": "0",
            "SUMMARY_ENABLED": "false",
            # An erasure's last pass at once, not two minutes after the first (PRV-1).
            "ERASURE_SETTLE_SECONDS": "0",
        },
    )
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(DEADLINE_S)
    try:
        yield driver
    finally:
        driver.quit()


class Console:
    """The console page in the browser, with the few moves a user makes."""

    def __init__(self, driver: WebDriver, server: ServerProcess) -> None:
        self.driver = driver
        self.server = server

    def until(self, condition: Callable[[WebDriver], T], what: str) -> T:
        """`condition`'s first true answer, checked at once and then after pauses growing from 50 to
        250 ms, up to DEADLINE_S. A check is a few WebDriver commands, and each costs the browser about
        10 ms of CPU: 20 checks a second through a reply that streams for seconds were most of this
        file's CPU."""
        deadline = time.monotonic() + DEADLINE_S
        pause = 0.05
        while True:
            try:
                result = condition(self.driver)
            except (NoSuchElementException, StaleElementReferenceException):
                result = False
            if result:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutException(f"{what} (not within {DEADLINE_S:.0f} s)")
            time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
            pause = min(pause * 1.5, 0.25)

    def find(self, css: str) -> WebElement:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def all(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def shown(self, css: str) -> WebElement:
        return self.until(
            lambda d: next((e for e in self.all(css) if e.is_displayed()), False), f"{css} shown"
        )

    def open(self) -> None:
        self.driver.set_window_size(1400, 1000)
        self.driver.get(f"{self.server.url}/console")
        self.driver.execute_script("sessionStorage.clear()")
        self.driver.get(f"{self.server.url}/console")
        self.shown("#signin-user")

    def sign_in(self, user: str) -> None:
        field = self.shown("#signin-user")
        field.clear()
        assert not self.find("#views").is_displayed()  # nothing but the sign-in before it
        field.send_keys(user, Keys.ENTER)  # the keyboard alone signs in (CON-6)
        self.until(lambda d: self.find("#who-name").text == user, f"signed in as {user}")
        self.until(lambda d: not self.find("#conv-more").text.startswith("Loading"), "list loaded")

    def switch_user(self, user: str) -> None:
        self.find("#signout").click()
        self.sign_in(user)

    def new_conversation(self, title: str, max_messages: int | None = None) -> None:
        self.find("#conv-new").click()
        self.shown("#new-title").send_keys(title)
        if max_messages is not None:
            self.find("#new-max").send_keys(str(max_messages))
        self.find("#new-create").click()
        self.until(lambda d: self.find("#chat-title").text == title, f"{title} open")

    def answers(self) -> list[WebElement]:
        return self.all("#messages li.msg.assistant[data-id]")

    def send(self, text: str) -> None:
        before = len(self.answers())
        box = self.find("#composer-input")
        box.send_keys(text)
        box.send_keys(Keys.CONTROL, Keys.ENTER)  # Ctrl+Enter sends
        self.until(lambda d: len(self.answers()) > before, f"the answer to {text!r}")
        self.until(lambda d: self.idle(), "send idle again")

    def idle(self) -> bool:
        """No reply on its way: Send says plain "Send" again (it says "Send after reply" while one is)."""
        return bool(self.find("#send-btn").text == "Send")

    def composer_text(self) -> str:
        return str(self.find("#composer-input").get_attribute("value"))

    def view(self, name: str) -> None:
        self.find(f'#views button[data-view="{name}"]').click()
        self.shown(f"#view-{name}")
        others = [v for v in self.all("main > section") if v.get_attribute("id") != f"view-{name}"]
        assert [v.get_attribute("id") for v in others if v.is_displayed()] == []

    def entry(self, message_id: str) -> WebElement:
        return self.find(f'#window-entries li.entry[data-id="{message_id}"]')

    def screenshot(self, name: str) -> None:
        folder = os.environ.get("CONSOLE_SCREENSHOTS")
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            self.driver.save_screenshot(str(Path(folder) / f"{name}.png"))


def _log_problems(driver: WebDriver, origin: str, network_errors_expected: bool) -> list[str]:
    problems = []
    for entry in driver.get_log("browser"):
        if entry["level"] != "SEVERE":
            continue
        # An API answer with an error status is logged by Chromium as a failed resource load; the tests
        # that provoke one (a failing model) allow those, nothing else.
        if entry.get("source") == "network" and network_errors_expected:
            continue
        problems.append(f"browser log: {entry['message']}")
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] != "Network.requestWillBeSent":
            continue
        url = message["params"]["request"]["url"]
        if not (url.startswith(origin + "/") or url == origin or url.startswith("data:")):
            problems.append(f"a request left the API's origin: {url}")
    return problems


@pytest.fixture
def console(
    browser: WebDriver, server: ServerProcess, model: OpenAIStandin, request: pytest.FixtureRequest
) -> Iterator[Console]:
    """The console opened fresh; afterwards the browser's logs must be clean (CON-1, CON-6)."""
    browser.get_log("browser")
    browser.get_log("performance")
    page = Console(browser, server)
    page.open()
    yield page
    expected = request.node.get_closest_marker("network_errors") is not None
    assert _log_problems(browser, server.url, expected) == []


def _api(server: ServerProcess, user: str) -> httpx.Client:
    return server.client(user)


# ---------------------------------------------------------------------------------------------- tests


def test_console_is_served_by_the_api_origin_with_a_strict_policy(server: ServerProcess) -> None:
    """CON-1: the page and its two files come from /console with a CSP that allows only this origin."""
    with httpx.Client(base_url=server.url) as client:
        page = client.get("/console")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "connect-src 'self'" in policy
        assert "default-src 'none'" in policy
        assert client.get("/console/console.js").headers["content-type"].startswith("text/javascript")
        assert client.get("/console/console.css").status_code == 200
        assert client.get("/console/../template.yaml").status_code == 404
        assert client.get("/console/nothing.js").status_code == 404
        for text in (
            page.text,
            client.get("/console/console.js").text,
            client.get("/console/console.css").text,
        ):
            assert "http://" not in text.replace("http://www.w3.org", "")
            assert "https://" not in text


def test_sign_in_send_three_messages_and_see_each_reply(console: Console, model: OpenAIStandin) -> None:
    """CON-2, CON-3: sign in with a user id, send three messages, each streamed answer is shown."""
    console.sign_in("ana")
    console.new_conversation("Trip plans", max_messages=4)
    # The first reply comes slowly, a word every 0.3 s: its text shows while it is still arriving.
    model.configure(chunk_delay=0.3)
    try:
        console.find("#composer-input").send_keys("Where should we go?", Keys.CONTROL, Keys.ENTER)
        live = console.until(
            lambda d: next(
                (
                    li
                    for li in console.all('#messages li.msg.assistant[aria-busy="true"]')
                    if "Stand-in" in li.text
                ),
                False,
            ),
            "part of the reply shown while it streams",
        )
        assert 'you said "Where should we go?"' not in live.text
        console.until(lambda d: len(console.answers()) == 1, "the streamed reply stored")
        console.until(lambda d: console.idle(), "send idle again")
    finally:
        model.configure(chunk_delay=0)
    for text in ("Somewhere warm", "Book it for May"):
        console.send(text)
    answers = [a.text for a in console.answers()]
    for n, text in enumerate(("Where should we go?", "Somewhere warm", "Book it for May")):
        assert f'you said "{text}"' in answers[n]
    assert len(answers) == 3
    assert len(model.completion_requests) == 3
    listed = console.find("#conv-list").text
    assert "Trip plans" in listed
    assert "6 messages" in listed
    console.screenshot("console-chat")


def test_questions_sent_while_a_reply_streams_are_queued_and_go_out_in_order(
    console: Console, server: ServerProcess, model: OpenAIStandin
) -> None:
    """CON-7: the composer clears the moment a message is sent; two more questions sent while the reply is
    on its way are queued (shown, in order) and go out one per finished reply; a draft typed while a reply
    streams stays in the box. All three are stored in order and nothing typed is lost."""
    console.sign_in("quinn")
    console.new_conversation("Back to back")
    questions = ["What is the capital of Peru?", "And how many live there?", "Is it warm in May?"]
    draft = "Should I pack a coat?"
    box = console.find("#composer-input")
    send = console.find("#send-btn")
    # Given a model that thinks a while before it answers, then streams a word every 0.2 s
    model.configure(mode="slow", slow_seconds=6, chunk_delay=0.2)

    # When the first question is sent
    box.send_keys(questions[0], Keys.CONTROL, Keys.ENTER)
    # Then the box is empty at once and Send says it waits for the reply
    console.until(lambda d: console.composer_text() == "", "the composer cleared on send")
    console.until(lambda d: "Waiting for the reply" in console.find("#progress").text, "waiting shown")
    assert send.text == "Send after reply"
    assert "Waiting for the reply" in (send.get_attribute("title") or "")

    # When two more are typed and sent while that reply is awaited
    for question in questions[1:]:
        box.send_keys(question, Keys.CONTROL, Keys.ENTER)
    # Then both are listed as queued, in order, and the box is empty again
    queued = console.until(
        lambda d: console.all("#queue li") if len(console.all("#queue li")) == 2 else False, "two queued"
    )
    assert [li.find_element(By.CSS_SELECTOR, ".text").text for li in queued] == questions[1:]
    assert console.composer_text() == ""
    assert len(console.answers()) == 0  # the first reply has not ended
    console.screenshot("console-queued")

    # When the model answers at once from now on, and a fourth question is typed (not sent) while the
    # second reply streams
    model.set_mode("ok")
    console.until(
        lambda d: any(questions[1] in li.text for li in console.all("#messages li.msg.user:not([data-id])")),
        "the second question on its way",
    )
    box.send_keys(draft)
    console.until(lambda d: len(console.answers()) == 3 and console.idle(), "all three answered")

    # Then the three went out in order, each answered, and the draft is still in the box
    assert console.composer_text() == draft
    assert not console.find("#queue-box").is_displayed()
    answers = [a.text for a in console.answers()]
    for answer, question in zip(answers, questions, strict=True):
        assert f'you said "{question}"' in answer
    asked = [r.json["messages"][-1]["content"] for r in model.completion_requests]
    assert asked == questions
    with _api(server, "quinn") as api:
        conversation_id = api.get("/conversations?limit=1").json()["items"][0]["conversation_id"]
        stored = api.get(f"/conversations/{conversation_id}?limit=50").json()["messages"]
    assert [m["content"] for m in stored if m["role"] == "user"] == questions


def test_a_queued_question_taken_back_returns_to_the_composer_and_is_not_sent(
    console: Console, server: ServerProcess, model: OpenAIStandin
) -> None:
    """CON-7: a question queued behind a reply can be taken back: it leaves the queue and returns to the
    box ahead of what was typed since, and only the first question goes out."""
    console.sign_in("theo")
    console.new_conversation("Second thoughts")
    box = console.find("#composer-input")
    model.configure(mode="slow", slow_seconds=6)
    box.send_keys("First question", Keys.CONTROL, Keys.ENTER)
    box.send_keys("Second question", Keys.CONTROL, Keys.ENTER)
    box.send_keys("a draft")
    taken = console.until(lambda d: console.find("#queue li button"), "the second question queued")
    taken.click()
    console.until(lambda d: not console.find("#queue-box").is_displayed(), "the queue empty")
    assert console.composer_text() == "Second question\n\na draft"
    console.until(lambda d: len(console.answers()) == 1 and console.idle(), "the first answered")
    assert console.composer_text() == "Second question\n\na draft"
    assert [r.json["messages"][-1]["content"] for r in model.completion_requests] == ["First question"]


@pytest.mark.network_errors
def test_a_message_the_service_refuses_comes_back_into_the_composer(
    console: Console, server: ServerProcess
) -> None:
    """CON-7: when a message cannot be sent (here its conversation was deleted meanwhile), its text is back
    in the box with the reason, and no bubble pretends it went out."""
    console.sign_in("nell")
    console.new_conversation("Gone soon")
    with _api(server, "nell") as api:
        conversation_id = api.get("/conversations?limit=1").json()["items"][0]["conversation_id"]
        assert api.delete(f"/conversations/{conversation_id}").status_code == 204
    console.find("#composer-input").send_keys("Are you still there?")
    console.find("#send-btn").click()
    console.until(lambda d: "Not sent" in console.find("#alert").text, "the refusal shown")
    assert "back in the box" in console.find("#alert").text
    assert console.composer_text() == "Are you still there?"
    assert console.idle()
    assert "Are you still there?" not in console.find("#messages").text


def test_inspector_shows_a_dropped_message_with_its_reason_and_pinning_keeps_it(
    console: Console, server: ServerProcess
) -> None:
    """CON-4 (WIN-6): the inspector marks what the window drops and why; a pin from it keeps the message."""
    console.sign_in("ines")
    console.new_conversation("Long talk", max_messages=4)
    for text in ("first question", "second question", "third question"):
        console.send(text)
    console.find("#inspect-btn").click()
    console.until(lambda d: len(console.all("#window-entries li.entry")) == 6, "six entries")
    first = console.all("#window-entries li.entry")[0]
    first_id = first.get_attribute("data-id")
    assert first.get_attribute("data-state") == "dropped"
    assert "max_messages" in first.find_element(By.CSS_SELECTOR, ".reason").text
    assert "first question" in first.text
    states = [e.get_attribute("data-state") for e in console.all("#window-entries li.entry")]
    assert states == ["dropped", "dropped", "dropped", "kept", "kept", "kept"]
    bars = console.all("#window-entries .bar span")
    assert all(float(b.value_of_css_property("width").removesuffix("px")) > 0 for b in bars)
    assert "tokens would be sent" in console.find("#budget-line").text
    assert "reserved for the reply" in console.find("#budget-line").text

    first.find_element(By.CSS_SELECTOR, "button").click()  # Pin
    console.until(
        lambda d: console.entry(first_id).get_attribute("data-state") == "kept", "pinned entry kept"
    )
    pinned = console.entry(first_id)
    assert "pinned" in pinned.text
    assert "Unpin" in pinned.text
    # The service agrees: the next window sends the pinned message.
    with _api(server, "ines") as api:
        conversation_id = api.get("/conversations?limit=1").json()["items"][0]["conversation_id"]
        window = api.post(f"/conversations/{conversation_id}/window", json={"content": "x"}).json()
    assert any(m["content"] == "first question" for m in window["messages"])
    console.screenshot("console-inspector")

    pinned.find_element(By.CSS_SELECTOR, "button").click()  # Unpin
    console.until(
        lambda d: console.entry(first_id).get_attribute("data-state") == "dropped", "unpinned, dropped"
    )


def test_another_user_sees_none_of_the_first_users_conversations(console: Console) -> None:
    """CON-2: switching user shows only that user's conversations (none of the first user's)."""
    console.sign_in("olga")
    console.new_conversation("Olga's secret plans")
    console.send("a private note")
    console.switch_user("peter")
    console.until(lambda d: console.find("#conv-empty").is_displayed(), "empty list shown")
    assert console.all("#conv-list li") == []
    assert "Olga" not in console.driver.find_element(By.TAG_NAME, "body").text
    console.switch_user("olga")
    console.until(lambda d: "Olga's secret plans" in console.find("#conv-list").text, "olga's list back")


def test_a_dialogue_world_shows_primary_and_ancillary_history_and_the_prompt(
    console: Console, server: ServerProcess
) -> None:
    """CON-5 (DLG-2): pick a world and participants; history with game-time labels; the structured prompt."""
    with _api(server, "gm") as api:
        for participants, speaker, line, tick in (
            (["player", "zorg"], "player", "Will you join the raid?", 60_000),
            (["player", "zorg"], "zorg", "Only for the loot.", 62_500),
            (["player", "trader", "zorg"], "trader", "Prices are up since the raid.", 120_000),
        ):
            entry = {"participant_id": speaker, "role": "character", "content": line, "game_tick": tick}
            answer = api.post(
                "/worlds/colony/dialogues/entries", json={"participants": participants, "entries": [entry]}
            )
            assert answer.status_code == 201, answer.text
    console.sign_in("gm")
    console.view("worlds")
    console.until(lambda d: "colony" in console.find("#world-select").text, "the world listed")
    console.driver.execute_script("document.getElementById('world-select').value = 'colony'")
    console.find("#world-open").click()
    console.shown("#participants-box")
    boxes = {b.get_attribute("value"): b for b in console.all("#participants input")}
    assert sorted(boxes) == ["player", "trader", "zorg"]
    for name, box in boxes.items():
        if box.is_selected() != (name in ("player", "zorg")):
            box.click()
    console.find("#history-btn").click()
    console.shown("#world-history")
    primary = console.find("#primary").text
    assert "Will you join the raid?" in primary
    assert "Only for the loot." in primary
    assert "tick 60000" in primary
    assert "1h" in primary
    assert "Prices are up since the raid." in console.find("#ancillary").text
    console.find("#prompt-btn").click()
    console.until(lambda d: len(console.all("#prompt-out li")) >= 3, "the prompt built")
    prompt = console.find("#prompt-out").text
    assert "Background" in prompt
    assert "What happened?" in prompt


def test_conversation_list_scrolls_searches_renames_and_deletes(
    console: Console, server: ServerProcess
) -> None:
    """CON-3 (API-23): 25 conversations load 20 at a time as the list scrolls; search finds by title
    (any case, accents ignored); rename and delete act on the service."""
    with _api(server, "dora") as api:
        for n in range(24):
            assert api.post("/conversations", json={"title": f"Note {n:02d}"}).status_code == 201
        assert api.post("/conversations", json={"title": "Alpine Café trip"}).status_code == 201
    console.sign_in("dora")
    console.until(lambda d: len(console.all("#conv-list li")) >= 20, "first page")
    console.driver.execute_script("document.getElementById('conv-more').scrollIntoView()")
    console.until(lambda d: len(console.all("#conv-list li")) == 25, "second page on scroll")
    titles = [
        li.find_element(By.CSS_SELECTOR, ".open").text.split("\n")[0] for li in console.all("#conv-list li")
    ]
    assert titles[0] == "Alpine Café trip"
    assert titles[-1] == "Note 00"

    console.find("#conv-search").send_keys("alpine cafe")
    console.until(lambda d: len(console.all("#conv-list li")) == 1, "search narrowed")
    console.find("#conv-list li .open").click()
    console.until(lambda d: console.find("#chat-title").text == "Alpine Café trip", "opened")

    console.find("#rename-btn").click()
    alert = console.until(lambda d: d.switch_to.alert, "rename prompt")
    alert.send_keys("Alps in June")
    alert.accept()
    console.until(lambda d: console.find("#chat-title").text == "Alps in June", "renamed")
    with _api(server, "dora") as api:
        assert "Alps in June" in [c["title"] for c in api.get("/conversations?limit=100").json()["items"]]

    console.find("#delete-btn").click()
    console.until(lambda d: d.switch_to.alert, "delete confirm").accept()
    console.until(lambda d: console.find("#chat-title").text == "No conversation open", "closed")
    with _api(server, "dora") as api:
        titles = [c["title"] for c in api.get("/conversations?limit=100").json()["items"]]
    assert "Alps in June" not in titles
    assert len(titles) == 24


def test_tool_calls_show_as_collapsible_pairs(console: Console, server: ServerProcess) -> None:
    """CON-3: an assistant tool call and its result are one collapsible pair, closed until opened."""
    with _api(server, "tess") as api:
        conversation_id = api.post("/conversations", json={"title": "Weather"}).json()["conversation_id"]
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
        }
        appended = api.post(
            f"/conversations/{conversation_id}/messages",
            json={
                "messages": [
                    {"role": "user", "content": "Weather in Oslo?"},
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "4°C and snowing"},
                    {"role": "assistant", "content": "It is 4°C and snowing in Oslo."},
                ]
            },
        )
        assert appended.status_code == 201, appended.text
    console.sign_in("tess")
    console.find("#conv-list li .open").click()
    pair = console.shown("#messages details.tool")
    assert "get_weather" in pair.text
    assert pair.get_attribute("open") is None
    assert not console.driver.find_element(By.XPATH, "//details//pre[contains(., 'snowing')]").is_displayed()
    pair.find_element(By.TAG_NAME, "summary").click()
    console.until(lambda d: pair.get_attribute("open") is not None, "pair opened")
    assert "4°C and snowing" in pair.text
    assert '{"city":"Oslo"}' in pair.text
    assert len(console.all("#messages li.msg.tool")) == 0  # the result sits inside its pair


@pytest.mark.network_errors
def test_a_failing_model_shows_the_providers_message(console: Console, model: OpenAIStandin) -> None:
    """CON-3: when the model fails, the console shows the provider's own error message."""
    console.sign_in("fred")
    console.new_conversation("Doomed")
    model.set_mode("error500")
    console.find("#composer-input").send_keys("hello?")
    console.find("#send-btn").click()
    console.until(lambda d: console.find("#alert").is_displayed(), "error shown")
    provider_says = "The server had an error while processing your request."
    assert provider_says in console.find("#alert").text
    console.until(lambda d: console.all("#messages .error"), "the failed reply shown")
    failed = console.find("#messages .error")
    assert provider_says in failed.text
    failed.find_element(By.TAG_NAME, "summary").click()
    console.until(lambda d: '"status_code": 500' in failed.text, "the provider's response shown")


def test_regenerate_makes_a_branch_and_switching_shows_the_other_answer(
    console: Console, model: OpenAIStandin
) -> None:
    """CON-3: regenerate adds a second answer; the branch control switches between the two."""
    console.sign_in("rita")
    console.new_conversation("Branches")
    console.send("tell me a thing")
    model.set_mode("ok", reply="A different answer.")
    console.answers()[-1].find_element(By.XPATH, ".//button[text()='Regenerate']").click()
    console.until(lambda d: "A different answer." in console.answers()[-1].text, "regenerated")
    control = console.answers()[-1].find_element(By.CSS_SELECTOR, ".branch")
    assert "2/2" in control.text
    control.find_element(By.CSS_SELECTOR, "button[aria-label='Previous branch']").click()
    console.until(lambda d: 'you said "tell me a thing"' in console.answers()[-1].text, "first answer back")
    assert "1/2" in console.answers()[-1].find_element(By.CSS_SELECTOR, ".branch").text

    user = console.find("#messages li.msg.user")
    user.find_element(By.XPATH, ".//button[text()='Edit']").click()
    box = console.shown("#messages li.msg.user textarea")
    box.clear()
    box.send_keys("tell me two things")
    console.find("#messages li.msg.user form button[type=submit]").click()
    console.until(lambda d: "tell me two things" in console.find("#messages li.msg.user").text, "edited")
    assert "2/2" in console.find("#messages li.msg.user .branch").text


def test_turn_log_and_usage_chart(console: Console) -> None:
    """CON-5: the open conversation's turns as a timeline; tokens per day as a chart with totals."""
    console.sign_in("uma")
    console.new_conversation("Counted")
    console.send("count me")
    console.view("turns")
    console.until(lambda d: "Turn 1" in console.find("#turns").text, "turn 1 listed")
    turns = console.find("#turns").text
    assert "ok" in turns
    assert "tokens" in turns
    assert "ms" in turns
    # The usage is added from the table's stream (COST-3): the view is opened once it has delivered.
    settle_streams(console.server.url)
    console.view("usage")
    console.until(lambda d: "model calls" in console.find("#usage-totals").text, "usage totals")
    assert "1 model calls" in console.find("#usage-totals").text
    bars = console.all("#usage-chart .day")
    assert len(bars) == 30
    assert bars[-1].size["height"] > 0
    assert all(b.size["height"] <= 1 for b in bars[:-1])


def test_prv4_your_data_exports_with_a_download_link_and_erases_after_the_typed_user_id(
    console: Console, server: ServerProcess
) -> None:
    """PRV-4: "Your data" exports (progress, then a link to the archive) and erases only once the user id
    is typed: the button is disabled before, enabled after; then the receipt, and the data is gone."""
    # Given a user with a conversation of one turn
    console.sign_in("vera")
    console.new_conversation("Private things")
    console.send("my diary")
    # When they open Your data and export
    console.view("data")
    assert console.find("#data-user").text == "vera"
    console.find("#export-btn").click()
    # Then the export is ready with a link to the archive, which holds the conversation
    link = console.shown("#export-link")
    console.until(lambda d: "Export ready" in console.find("#export-status").text, "export ready")
    assert "1 conversations, 2 messages" in console.find("#export-status").text
    archive = json.loads(gzip.decompress(httpx.get(str(link.get_attribute("href")), timeout=30).content))
    assert archive["user_id"] == "vera"
    assert "my diary" in json.dumps(archive)
    # And erasing is not possible until the user id is typed exactly
    erase, field = console.find("#erase-btn"), console.find("#erase-confirm")
    assert not erase.is_enabled()
    field.send_keys("ver")
    assert not erase.is_enabled()
    field.send_keys("a")
    console.until(lambda d: erase.is_enabled(), "erase enabled once the user id is typed")
    console.screenshot("console-your-data")
    # When it is erased
    erase.click()
    # Then the receipt is shown and nothing of the user is left
    receipt = console.shown("#erase-receipt")
    console.until(lambda d: "Your data is erased" in console.find("#erase-status").text, "erased")
    assert "Items erased" in receipt.text
    assert not erase.is_enabled()
    with _api(server, "vera") as api:
        assert api.get("/conversations").json()["items"] == []
        assert api.get("/users/vera/erasure").json()["status"] == "done"


CONTRAST_JS = """
const lum = (rgb) => {
  const [r, g, b] = rgb.map((v) => {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
const background = (node) => {
  for (let n = node; n; n = n.parentElement) {
    const c = parse(getComputedStyle(n).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3);
  }
  return [255, 255, 255];
};
const low = [];
for (const node of document.querySelectorAll('body *')) {
  const text = [...node.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim());
  if (!text || !node.offsetParent || node.closest('[disabled]')) continue;
  const fg = lum(parse(getComputedStyle(node).color).slice(0, 3));
  const bg = lum(background(node));
  const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
  const what = node.textContent.trim().slice(0, 30);
  if (ratio < 4.5) low.push(`${node.tagName}.${node.className}: ${ratio.toFixed(2)} "${what}"`);
}
return low;
"""


def test_phone_width_and_labels(console: Console) -> None:
    """CON-6: at 390 px nothing scrolls sideways; every field has a label, every button a name, and all
    visible text has a contrast of at least 4.5:1 (WCAG AA) against its background."""
    console.driver.set_window_size(390, 844)
    console.sign_in("vera")
    console.new_conversation("Small screen")
    console.send("hi from a phone")
    console.find("#inspect-btn").click()
    console.shown("#window-entries li.entry")
    for view in ("chat", "turns", "usage", "worlds"):
        console.view(view)
        width = console.driver.execute_script("return document.documentElement.scrollWidth")
        assert width <= console.driver.execute_script("return window.innerWidth"), view
    unlabelled = console.driver.execute_script(
        """
        return [...document.querySelectorAll('input, select, textarea')].filter(f =>
            !(f.labels && f.labels.length) && !f.getAttribute('aria-label')
        ).map(f => f.id || f.outerHTML);
        """
    )
    assert unlabelled == []
    nameless = console.driver.execute_script(
        "return [...document.querySelectorAll('button')].filter(b => !(b.textContent.trim() ||"
        " b.getAttribute('aria-label'))).map(b => b.outerHTML);"
    )
    assert nameless == []
    console.view("chat")
    assert console.driver.execute_script(CONTRAST_JS) == []


def test_at_phone_width_a_long_title_wraps_by_words_and_its_buttons_work(console: Console) -> None:
    """CON-6: at 390 px the open conversation's title wraps between words in at most two lines (never a
    letter a line beside its buttons), the whole title is its tooltip, and the buttons stay whole and work."""
    console.driver.set_window_size(390, 844)
    console.sign_in("wren")
    title = "Planning the long summer walking holiday across the northern mountains, lakes and islands"
    console.new_conversation(title)
    console.send("hi from a phone")
    heading = console.find("#chat-title")
    line = float(heading.value_of_css_property("line-height").removesuffix("px"))
    assert heading.size["height"] <= 2 * line + 1
    assert heading.size["width"] >= 250
    assert heading.get_attribute("title") == title
    for button in ("#rename-btn", "#delete-btn", "#inspect-btn"):
        element = console.find(button)
        assert element.is_displayed()
        assert element.size["height"] <= 2 * float(
            element.value_of_css_property("line-height").removesuffix("px")
        )
    width = console.driver.execute_script("return document.documentElement.scrollWidth")
    assert width <= console.driver.execute_script("return window.innerWidth")
    console.screenshot("console-phone")
    console.find("#inspect-btn").click()
    console.shown("#window-entries li.entry")


def test_sign_in_with_a_jwt_as_a_deployed_api_wants(
    browser: WebDriver, standin: OpenAIStandin, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """CON-2: with the server in JWT mode (as deployed: the token is verified against the issuer's keys),
    a pasted token signs in as its `sub`; a token the issuer did not sign is refused with a message."""
    with jwt_issuer() as issuer:
        process = ServerProcess(
            tmp_path_factory.mktemp("console-jwt"),
            env={"LLM_BASE_URL": standin.base_url, "LLM_MODEL": "standin-model"},
            args=["--jwt-issuer", issuer.url, "--jwt-audience", "client-1"],
        ).start()
        try:
            browser.get_log("browser")
            browser.get_log("performance")
            page = Console(browser, process)
            page.open()
            token = issuer.token(sub="token-user")
            page.find("#signin-token").send_keys(token)
            page.find("#signin-submit").click()
            page.until(lambda d: page.find("#who-name").text == "token-user", "signed in by token")
            page.new_conversation("Signed in by token")
            page.send("hello with a token")
            with httpx.Client(base_url=process.url) as client:
                assert client.get("/conversations", headers={"X-User-Id": "token-user"}).status_code == 401
                mine = client.get("/conversations", headers={"Authorization": f"Bearer {token}"}).json()
            assert [c["title"] for c in mine["items"]] == ["Signed in by token"]

            page.find("#signout").click()
            issuer.add_key("rogue", publish=False)
            page.shown("#signin-token").send_keys(issuer.token(kid="rogue", sub="intruder"))
            page.find("#signin-submit").click()
            page.until(lambda d: "Sign-in failed" in page.find("#alert").text, "refusal shown")
            assert "Unauthorized" in page.find("#alert").text
            assert not page.find("#views").is_displayed()
            problems = _log_problems(browser, process.url, network_errors_expected=True)
            assert problems == []
        finally:
            process.stop()
