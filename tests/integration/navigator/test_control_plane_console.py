"""The Control Plane console (issue 25) in a real browser: Debian's chromium driven by Playwright for
Python, against the navigator served by its runtime on an ephemeral port over the real registry.

The test clicks list -> detail -> uses -> routes and keeps a screenshot of each view under
`.local/artifacts/console/` (git-ignored). `make test` installs chromium first (`make tools` runs
`deploy/local/chromium.sh`); without it the test is skipped and says how to install it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from mnemo_auth import DEVELOPMENT_SECRET, mint_token
from mnemo_navigator.settings import Settings
from mnemo_store.registry import Route, apply_routes

from tests.infrastructure import free_port
from tests.integration.navigator.conftest import NewTenant, navigator_dsn, serving_navigator

pytestmark = pytest.mark.timeout(180)

CHROMIUM = os.environ.get("MNEMO_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[3] / ".local" / "artifacts" / "console"
HOSTILE_NAME = "<img src=x onerror=\"document.title='owned'\">"


@pytest.fixture(scope="module")
async def base_url(app_dsn: str) -> AsyncIterator[str]:
    settings = Settings(
        port=free_port(),
        database_url=navigator_dsn(app_dsn),
        consume_requests=False,
        relay_outbox=False,
        token_secret=DEVELOPMENT_SECRET,
    )
    async with serving_navigator(settings) as base:
        yield base


@pytest.fixture
async def registry_rows(owner_connection: asyncpg.Connection) -> AsyncIterator[dict[str, str]]:
    suffix = uuid.uuid4().hex[:10]
    rows = {
        "published": f"fee-schedule-{suffix}",
        "draft": f"drafty-{suffix}",
        "route": f"overdraft_fee_qa-{suffix}",
    }
    for corpus_id, status, name in (
        (rows["published"], "published", "Fee schedule"),
        (rows["draft"], "draft", HOSTILE_NAME),
    ):
        await owner_connection.execute(
            "INSERT INTO mnemo.corpora (corpus_id, display_name, url, status, kind, owner,"
            " definition, version) VALUES ($1, $2, 'http://127.0.0.1:9/search', $3, 'external',"
            " 'deposits', $4, 'v1')",
            corpus_id,
            name,
            status,
            json.dumps({"collection": "fees", "note": "the inspector shows this"}),
        )
    await apply_routes(
        owner_connection,
        [
            Route(rows["route"], "2026.08.1", "deterministic_prefetch", (rows["published"],), True),
            Route(f"tool-{suffix}", "1", "tool", (rows["published"],), True),
        ],
    )
    yield rows
    await owner_connection.execute("DELETE FROM mnemo.routes WHERE route_id LIKE $1", f"%-{suffix}")
    await owner_connection.execute(
        "DELETE FROM mnemo.corpora WHERE corpus_id = ANY($1::text[])",
        [rows["published"], rows["draft"]],
    )


@pytest.mark.skipif(
    not os.path.isfile(CHROMIUM),
    reason=f"Debian's chromium is not installed at {CHROMIUM}: `bash deploy/local/chromium.sh` "
    "installs it (`make tools`, which `make test` runs, does)",
)
async def test_an_admin_clicks_from_the_list_to_a_corpus_its_uses_and_the_routes(
    base_url: str, new_tenant: NewTenant, registry_rows: dict[str, str]
) -> None:
    from playwright.async_api import async_playwright, expect

    tenant = await new_tenant()
    reader = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=("read",))
    admin = mint_token(tenant=tenant, secret=DEVELOPMENT_SECRET, scopes=("admin",))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    published, draft, route = (
        registry_rows["published"],
        registry_rows["draft"],
        registry_rows["route"],
    )

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"], headless=True
        )
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{base_url}/console")
            await expect(page).to_have_title("Mnemo Control Plane")

            # A token without the admin scope sees the API's refusal and no rows.
            await page.fill("#token", reader)
            await page.click("#connect")
            await expect(page.locator("#error")).to_contain_text("FORBIDDEN")
            await expect(page.locator("#corpora-view")).to_be_hidden()

            await page.fill("#token", admin)
            await page.click("#connect")
            row = page.locator(f'tr[data-corpus="{published}"]')
            await expect(row).to_be_visible()
            await expect(page.locator("#error")).to_have_text("")
            for status in ("draft", "published", "deprecated"):
                await expect(page.locator(f'#counts span[data-status="{status}"]')).to_contain_text(
                    f"{status}: "
                )
            hostile = page.locator(f'tr[data-corpus="{draft}"]')
            await expect(hostile).to_contain_text(HOSTILE_NAME)  # shown as text, never as markup
            assert await page.locator("#corpora img").count() == 0
            await page.screenshot(path=str(ARTIFACTS / "1-list.png"), full_page=True)

            await row.click()
            await expect(page.locator("#detail-title")).to_have_text(f"Corpus {published}")
            inspector = json.loads(await page.locator("#inspector").inner_text())
            assert inspector["corpus_id"] == published
            assert inspector["status"] == "published"
            assert inspector["definition"] == {
                "collection": "fees",
                "note": "the inspector shows this",
            }
            await page.screenshot(path=str(ARTIFACTS / "2-detail.png"), full_page=True)

            uses = page.locator("#uses tbody tr")
            await expect(uses).to_have_count(2)
            await expect(page.locator("#uses")).to_contain_text(route)
            await expect(page.locator("#uses")).to_contain_text("2026.08.1")
            await expect(page.locator("#uses")).to_contain_text("tool")
            await page.locator("#uses-panel").screenshot(path=str(ARTIFACTS / "3-uses.png"))

            await page.click("#show-routes")
            await expect(page.locator("#routes-view")).to_be_visible()
            await expect(page.locator("#routes")).to_contain_text(route)
            await page.screenshot(path=str(ARTIFACTS / "4-routes.png"), full_page=True)

            await page.click("#show-corpora")
            await expect(page.locator(f'tr[data-corpus="{published}"]')).to_be_visible()
            assert await page.title() == "Mnemo Control Plane"
            assert errors == []
        finally:
            await browser.close()
    assert all((ARTIFACTS / name).stat().st_size > 0 for name in ("1-list.png", "2-detail.png"))


async def test_the_console_page_holds_no_data_and_forbids_foreign_scripts(base_url: str) -> None:
    async with httpx.AsyncClient() as client:
        page = await client.get(f"{base_url}/console")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "script-src 'sha256-" in policy
    assert "unsafe-inline" not in policy.split("script-src", 1)[1].split(";", 1)[0]
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "corpus_id" not in page.text.split("<script>", 1)[0]
